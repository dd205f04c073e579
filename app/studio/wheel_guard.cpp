#include "app/studio/wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QScrollBar>
#include <QWheelEvent>

namespace hippie::studio {

void WheelGuard::install(QWidget* root) {
    auto* guard = root->findChild<WheelGuard*>(QString(), Qt::FindDirectChildrenOnly);
    if (!guard) guard = new WheelGuard(root);
    const auto guardOne = [guard](QWidget* w) {
        w->setFocusPolicy(Qt::StrongFocus);  // the wheel does not give focus either
        w->removeEventFilter(guard);
        w->installEventFilter(guard);
    };
    for (QAbstractSpinBox* s : root->findChildren<QAbstractSpinBox*>()) guardOne(s);
    for (QComboBox* c : root->findChildren<QComboBox*>()) guardOne(c);
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() != QEvent::Wheel) return false;
    auto* w = qobject_cast<QWidget*>(watched);
    if (!w || w->hasFocus()) return false;
    // Scroll the nearest scroll area instead, as if the control were not there.
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
        if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
            QCoreApplication::sendEvent(area->verticalScrollBar(), event);
            break;
        }
    }
    return true;
}

}  // namespace hippie::studio
