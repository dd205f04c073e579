#include "app/studio/message_label.h"

namespace hippie::studio {

MessageLabel::MessageLabel(QWidget* parent) : QLabel(parent) {
    setWordWrap(true);
    setTextInteractionFlags(Qt::TextSelectableByMouse);
}

void MessageLabel::showInfo(const QString& text) {
    error_ = false;
    setStyleSheet(QStringLiteral("color: #505050;"));
    setText(text);
}

void MessageLabel::showError(const QString& text) {
    error_ = true;
    setStyleSheet(QStringLiteral("color: #b00020;"));
    setText(text);
}

}  // namespace hippie::studio
