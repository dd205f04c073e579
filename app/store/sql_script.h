#pragma once
// Splits an SQL script (a migration in resources/migrations/) into single statements, because
// Qt SQL runs one statement per QSqlQuery::exec(). Understands '--' and '/* */' comments,
// quoted strings and identifiers ('...', "...", `...`, [...]) and CREATE TRIGGER bodies
// (BEGIN ... END, with CASE ... END inside), whose inner ';' do not end the statement.
#include <QString>
#include <QStringList>

namespace hippie::store {

// Statements without their final ';', trimmed; comments-only pieces are dropped. Throws
// hippie::Error naming `where` when the script ends inside a string, comment or trigger body.
QStringList splitSqlScript(const QString& script, const QString& where = QStringLiteral("SQL script"));

}  // namespace hippie::store
