#pragma once
// The comparison page: the sortable table of planners' results over the charts, with the
// caption `hippie-plan compare` prints under its own (the objective, what × ref divides by).
// Selecting a row selects that plan everywhere.
#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace hippie::widgets {
class ComparisonCharts;
class ComparisonModel;
}  // namespace hippie::widgets

namespace hippie::studio {

class ComparePage : public QWidget {
    Q_OBJECT
public:
    explicit ComparePage(widgets::ComparisonModel* model, QWidget* parent = nullptr);

    void selectModelRow(int row);  // selects without re-emitting when already selected
    int selectedModelRow() const;
    QTableView* table() const { return table_; }
    QLabel* caption() const { return caption_; }
    widgets::ComparisonCharts* charts() const { return charts_; }

signals:
    void modelRowSelected(int row);
    void cancelRequested(const QString& planner);

private:
    widgets::ComparisonModel* model_;
    QSortFilterProxyModel* proxy_;
    QTableView* table_;
    QLabel* caption_;
    widgets::ComparisonCharts* charts_;
};

}  // namespace hippie::studio
