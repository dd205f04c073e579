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
        // Throughput and ME over the reference plan's (referenceRow: the best baseline under the
        // objective, as in `hippie-plan compare`), "1.23×"; "*" marks an ME × ref below the floor.
        ThroughputVsReferenceColumn,
        PeakMemoryColumn,
        MemoryEfficiencyColumn,
        MemoryEfficiencyVsReferenceColumn,
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
    // The row the × ref columns divide by (referenceResult of the rows so far), or -1.
    int referenceRow() const { return reference_; }
    // The words under `hippie-plan compare`'s table, with "×": the objective (and its floor),
    // what × ref is relative to, and the '*' footnote where a row has one. Empty without rows;
    // while planners run and no baseline has a plan, it leaves × ref out.
    QString caption() const { return caption_; }
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

signals:
    void captionChanged(const QString& caption);

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
    // After a row's result or the objective changed: the floor, the reference and the caption.
    void refreshComparison();
    QString makeCaption() const;
    bool belowFloor(const PlannerResult& result) const;
    QVariant relativeToReference(const PlannerResult& result, int column) const;  // the ratio, or null

    std::vector<Row> rows_;
    Objective objective_ = Objective::MemoryEfficiency;
    double throughput_floor_ = 0.9;
    double floor_ = 0;  // comparisonFloor of the rows, kept: every Status cell reads it
    int reference_ = -1;
    QString caption_;
};

}  // namespace hippie::widgets
