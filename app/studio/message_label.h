#pragma once
// A label under a panel that says what just happened: an error in red, else muted text.
#include <QLabel>

namespace hippie::studio {

class MessageLabel : public QLabel {
    Q_OBJECT
public:
    explicit MessageLabel(QWidget* parent = nullptr);
    void showInfo(const QString& text);
    void showError(const QString& text);
    bool showsError() const { return error_; }

private:
    bool error_ = false;
};

}  // namespace hippie::studio
