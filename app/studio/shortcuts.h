#pragma once
// Every keyboard shortcut of the studio in one table: the menus and pages bind from it, and
// Help ▸ Keyboard shortcuts and the user guide list it, so the three never disagree.
#include <vector>

#include <QKeySequence>
#include <QString>

namespace hippie::studio {

struct ShortcutEntry {
    QString keys;  // as shown: "Ctrl+R", "W / S"
    QString what;
    QString where;  // "everywhere", "Schedule", "Teaching"
};

const std::vector<ShortcutEntry>& keyboardShortcuts();
QString shortcutsHtml();  // a table for the help dialog

}  // namespace hippie::studio
