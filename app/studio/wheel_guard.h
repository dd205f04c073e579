#pragma once
// Spin boxes and combo boxes in a scrolled panel take the mouse wheel only when they have
// focus: scrolling the Setup dock past a time budget must scroll the dock, not change the
// budget. Installed on every such child of a widget; an unfocused one hands the wheel to the
// scroll area around it.
#include <QObject>

class QWidget;

namespace hippie::studio {

class WheelGuard : public QObject {
    Q_OBJECT
public:
    // Guards every QAbstractSpinBox and QComboBox under `root` (now: call again for new ones).
    static void install(QWidget* root);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    using QObject::QObject;
};

}  // namespace hippie::studio
