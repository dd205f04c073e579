#pragma once
// The table of planners' results: one row per planner run, appearing as it starts, with its
// progress while it runs and its plan's metrics once it finishes. Sort through a
// QSortFilterProxyModel on SortRole (numbers, not their text).
#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "planners/algorithms/planner.h"

namespace hippie::widgets {

class ComparisonModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        PlannerColumn,
        ShapeColumn,          // "4×4" (pp×dp) or "placement"
        MicroBatchesColumn,
        ScheduleColumn,
        IterationTimeColumn,
        ThroughputColumn,
        PeakMemoryColumn,
        MemoryEfficiencyColumn,
        BubbleColumn,
        PlanningTimeColumn,
        // Running, done (its plan fits memory or does not), skipped, failed or cancelled, with
        // the planner's reason; its tooltip adds the planner's notes (fallbacks, idle devices,
        // a time budget reached). One column, so that the table fits 1280x800 unscrolled.
        StatusColumn,
        ColumnCount
    };
    enum class State { Running, Done, Failed, Cancelled };
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int ProgressRole = Qt::UserRole + 2;  // 0..1 while running, else -1

    explicit ComparisonModel(QObject* parent = nullptr);

    void clear();
    void addRunning(const QString& planner);
    void setProgress(const QString& planner, double fraction, const QString& message);
    void setResult(const PlannerResult& result);  // replaces the planner's row or appends one
    void setFailed(const QString& planner, const QString& message, bool cancelled);

    int rowOfPlanner(const QString& planner) const;  // -1 if absent
    const PlannerResult* result(int row) const;      // null while running or after a failure
    State state(int row) const;
    // The feasible row with the best value of `objective`, or -1. Under me-floor only rows at
    // or above the comparison's floor count (`throughput_floor` of the fastest plan any
    // planner found: comparisonFloor), as in `hippie-plan compare`.
    int bestRow(Objective objective, double throughput_floor = 0.9) const;
    // The objective the rows were planned for: under me-floor a row that fits but runs below
    // the comparison's floor says so in its Status ("fits · below the floor of N samples/s").
    void setObjective(Objective objective, double throughput_floor);
    double floorThroughput() const;  // comparisonFloor of the rows so far; 0 unless me-floor
    int finishedCount() const;
    // True when the result carries simulated metrics (infeasible results may not).
    static bool hasMetrics(const PlannerResult& result);
    // The planner's notes, joined by `separator`.
    static QString notesText(const PlannerResult& result, const char* separator);
    // A row's Status tooltip: its message, then its notes, one a line.
    QString statusToolTip(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        QString planner;
        State state = State::Running;
        double progress = 0;
        QString message;
        std::optional<PlannerResult> result;
    };
    std::vector<PlannerResult> results() const;  // a row's result, or an infeasible one
    QVariant display(const Row& row, int column) const;
    QVariant sortKey(const Row& row, int column) const;
    int ensureRow(const QString& planner);
    void rowChanged(int row);
    void refreshFloor();  // after a row's result or the objective changed

    std::vector<Row> rows_;
    Objective objective_ = Objective::MemoryEfficiency;
    double throughput_floor_ = 0.9;
    double floor_ = 0;  // comparisonFloor of the rows, kept: every Status cell reads it
};

}  // namespace hippie::widgets
