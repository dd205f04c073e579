#include "app/cli/table.h"

#include <algorithm>
#include <ostream>

namespace hippie::cli {

namespace {

constexpr const char* kColumnGap = "  ";

bool hasHeader(const std::vector<Column>& columns) {
    return std::any_of(columns.begin(), columns.end(), [](const Column& c) { return !c.header.empty(); });
}

std::string padded(const std::string& text, size_t width, Align align) {
    const std::string pad(width - std::min(width, text.size()), ' ');
    return align == Align::Right ? pad + text : text + pad;
}

void printLine(std::ostream& out, std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks (npos + 1 == 0 clears a blank line)
    out << line << '\n';
}

}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::addRow(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::vector<size_t> Table::widths() const {
    std::vector<size_t> w(columns_.size(), 0);
    for (size_t c = 0; c < columns_.size(); ++c) {
        w[c] = columns_[c].header.size();
        for (const auto& row : rows_) w[c] = std::max(w[c], row[c].size());
    }
    return w;
}

void Table::print(std::ostream& out) const {
    const std::vector<size_t> w = widths();
    const auto printRow = [&](auto cellText) {
        std::string line;
        for (size_t c = 0; c < columns_.size(); ++c) line += (c > 0 ? kColumnGap : "") + padded(cellText(c), w[c], columns_[c].align);
        printLine(out, std::move(line));
    };
    if (hasHeader(columns_)) {
        printRow([&](size_t c) { return columns_[c].header; });
        printRow([&](size_t c) { return std::string(columns_[c].header.empty() ? 0 : w[c], '-'); });
    }
    for (const auto& row : rows_) printRow([&](size_t c) { return row[c]; });
}

void printFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields) {
    Table t({{"", Align::Left}, {"", Align::Left}});
    for (const auto& [key, value] : fields) t.addRow({key, value});
    t.print(out);
}

void printHeading(std::ostream& out, const std::string& title) { out << '\n' << title << '\n'; }

}  // namespace hippie::cli
