#pragma once
// A plain-text table with aligned columns: every table hippie-plan prints goes through it.
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace hippie::cli {

enum class Align { Left, Right };

struct Column {
    std::string header;
    Align align = Align::Left;
};

class Table {
public:
    explicit Table(std::vector<Column> columns);

    void addRow(std::vector<std::string> cells);  // missing cells print empty
    // Header (when any column has one), a rule under it, then the rows.
    void print(std::ostream& out) const;

private:
    std::vector<size_t> widths() const;

    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the values aligned: a two-column table without a header.
void printFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields);

// A section title followed by its content.
void printHeading(std::ostream& out, const std::string& title);

}  // namespace hippie::cli
