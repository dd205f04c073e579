#include "app/studio/shortcuts.h"

#include <QObject>

namespace hippie::studio {

const std::vector<ShortcutEntry>& keyboardShortcuts() {
    static const std::vector<ShortcutEntry> all = {
        {QStringLiteral("Ctrl+O"), QObject::tr("Open a plan file"), QObject::tr("everywhere")},
        {QStringLiteral("Ctrl+R"), QObject::tr("Run the ticked planners"), QObject::tr("everywhere")},
        {QStringLiteral("Ctrl+Shift+R"), QObject::tr("Run the selected plan on workers"), QObject::tr("everywhere")},
        {QStringLiteral("Ctrl+1 … Ctrl+6"), QObject::tr("Compare, Schedule, Operator graph, Teaching, Run, Run history"),
         QObject::tr("everywhere")},
        {QStringLiteral("Ctrl+Tab / Ctrl+Shift+Tab"), QObject::tr("Next / previous page"), QObject::tr("everywhere")},
        {QStringLiteral("F1"), QObject::tr("User guide"), QObject::tr("everywhere")},
        {QStringLiteral("Ctrl+Q"), QObject::tr("Quit"), QObject::tr("everywhere")},
        {QStringLiteral("W / S"), QObject::tr("Zoom in / out at the mouse cursor"), QObject::tr("Schedule, Teaching")},
        {QStringLiteral("A / D"), QObject::tr("Pan earlier / later"), QObject::tr("Schedule, Teaching")},
        {QStringLiteral("Home or 0"), QObject::tr("Fit the whole iteration"), QObject::tr("Schedule, Teaching")},
        {QStringLiteral("Shift+W / Shift+S"), QObject::tr("Zoom the memory curves vertically"), QObject::tr("Schedule, Teaching")},
        {QStringLiteral("Click / Esc"), QObject::tr("Select a block: its details, what it waits on and what waits on it / clear"), QObject::tr("Schedule")},
        {QObject::tr("Drag along the time axis"), QObject::tr("Measure a span (Esc clears)"), QObject::tr("Schedule")},
        {QObject::tr("Double-click a row label"), QObject::tr("Fold a node into one row / unfold it"), QObject::tr("Schedule")},
        {QObject::tr("Click a memory legend entry"), QObject::tr("Highlight that device's curve and Gantt row / undo"), QObject::tr("Schedule")},
        {QStringLiteral("Right or Space / Left"), QObject::tr("Step forward / back"), QObject::tr("Teaching")},
        {QStringLiteral("P"), QObject::tr("Play / pause"), QObject::tr("Teaching")},
        {QStringLiteral("Ctrl+F, F3 / Shift+F3"), QObject::tr("Search ops, next / previous match"), QObject::tr("Operator graph")},
    };
    return all;
}

QString shortcutsHtml() {
    QString html = QStringLiteral("<table cellspacing='0' cellpadding='4'><tr><th align='left'>%1</th><th align='left'>%2</th>"
                                  "<th align='left'>%3</th></tr>")
                       .arg(QObject::tr("Keys"), QObject::tr("Action"), QObject::tr("Where"));
    for (const ShortcutEntry& s : keyboardShortcuts())
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td></tr>").arg(s.keys.toHtmlEscaped(), s.what.toHtmlEscaped(), s.where);
    return html + QStringLiteral("</table>");
}

}  // namespace hippie::studio
