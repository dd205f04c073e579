#include "app/store/sql_script.h"

#include "planners/common/error.h"

namespace hippie::store {

namespace {

bool isWordChar(QChar c) { return c.isLetterOrNumber() || c == u'_'; }

// Tracks the words of the statement being read, to know whether it is a CREATE TRIGGER and how
// deep its BEGIN/CASE ... END nesting is.
struct StatementShape {
    QStringList leading;  // the first few words, upper case
    bool trigger = false;
    int depth = 0;        // open BEGIN/CASE blocks inside a trigger

    void word(const QString& w) {
        const QString up = w.toUpper();
        if (leading.size() < 4) {
            leading << up;
            // CREATE [TEMP|TEMPORARY] TRIGGER
            if (leading.size() >= 2 && leading[0] == u"CREATE" &&
                (leading[1] == u"TRIGGER" ||
                 (leading.size() >= 3 && (leading[1] == u"TEMP" || leading[1] == u"TEMPORARY") && leading[2] == u"TRIGGER")))
                trigger = true;
        }
        if (!trigger) return;
        if (up == u"BEGIN" || up == u"CASE") ++depth;
        else if (up == u"END" && depth > 0) --depth;
    }
    bool endsAtSemicolon() const { return !trigger || depth == 0; }
};

}  // namespace

QStringList splitSqlScript(const QString& script, const QString& where) {
    QStringList out;
    QString current;
    bool has_code = false;  // `current` holds more than comments and blanks
    StatementShape shape;
    const qsizetype n = script.size();
    qsizetype i = 0;
    auto finish = [&] {
        if (has_code) out << current.trimmed();
        current.clear();
        has_code = false;
        shape = {};
    };
    while (i < n) {
        const QChar c = script[i];
        if (c == u'-' && i + 1 < n && script[i + 1] == u'-') {  // line comment: dropped
            while (i < n && script[i] != u'\n') ++i;
            continue;
        }
        if (c == u'/' && i + 1 < n && script[i + 1] == u'*') {  // block comment: dropped
            const qsizetype end = script.indexOf(QStringLiteral("*/"), i + 2);
            if (end < 0) throw Error(where.toStdString() + ": a /* comment is never closed");
            i = end + 2;
            current += u' ';
            continue;
        }
        if (c == u'\'' || c == u'"' || c == u'`' || c == u'[') {
            const QChar close = c == u'[' ? QChar(u']') : c;
            qsizetype j = i + 1;
            for (;;) {
                if (j >= n) throw Error(where.toStdString() + ": a quoted " + (c == u'\'' ? "string" : "name") +
                                        " is never closed");
                if (script[j] == close) {
                    if (close != u']' && j + 1 < n && script[j + 1] == close) {  // doubled quote
                        j += 2;
                        continue;
                    }
                    break;
                }
                ++j;
            }
            current += script.mid(i, j + 1 - i);
            has_code = true;
            i = j + 1;
            continue;
        }
        if (isWordChar(c)) {
            qsizetype j = i;
            while (j < n && isWordChar(script[j])) ++j;
            const QString w = script.mid(i, j - i);
            shape.word(w);
            current += w;
            has_code = true;
            i = j;
            continue;
        }
        if (c == u';' && shape.endsAtSemicolon()) {
            finish();
            ++i;
            continue;
        }
        current += c;
        if (!c.isSpace()) has_code = true;
        ++i;
    }
    if (has_code) {
        if (shape.trigger && shape.depth > 0)
            throw Error(where.toStdString() + ": a CREATE TRIGGER body (BEGIN ... END) is never closed");
        finish();
    }
    return out;
}

}  // namespace hippie::store
