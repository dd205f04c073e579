#include "widgets/compare/comparison_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

#include <algorithm>
#include <iterator>

#include "planners/algorithms/comparison_caption.h"
#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/schedule/plan_shape.h"
#include "widgets/common/units.h"

namespace hippie::widgets {

ComparisonModel::ComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

void ComparisonModel::clear() {
    beginResetModel();
    rows_.clear();
    floor_ = 0;
    reference_ = -1;
    endResetModel();
    refreshComparison();
}

int ComparisonModel::ensureRow(const QString& planner) {
    const int existing = rowOfPlanner(planner);
    if (existing >= 0) return existing;
    const int row = static_cast<int>(rows_.size());
    beginInsertRows({}, row, row);
    rows_.push_back(Row{planner, State::Running, 0, {}, std::nullopt});
    endInsertRows();
    return row;
}

void ComparisonModel::rowChanged(int row) { emit dataChanged(index(row, 0), index(row, ColumnCount - 1)); }

void ComparisonModel::addRunning(const QString& planner) {
    const int row = ensureRow(planner);
    Row& r = rows_[static_cast<size_t>(row)];
    r.state = State::Running;
    r.progress = 0;
    r.message.clear();
    r.result.reset();
    rowChanged(row);
    refreshComparison();
}

void ComparisonModel::setProgress(const QString& planner, double fraction, const QString& message) {
    const int row = rowOfPlanner(planner);
    if (row < 0 || rows_[static_cast<size_t>(row)].state != State::Running) return;
    rows_[static_cast<size_t>(row)].progress = fraction;
    rows_[static_cast<size_t>(row)].message = message;
    emit dataChanged(index(row, StatusColumn), index(row, StatusColumn));
}

void ComparisonModel::setResult(const PlannerResult& result) {
    const int row = ensureRow(QString::fromStdString(result.planner));
    Row& r = rows_[static_cast<size_t>(row)];
    r.state = State::Done;
    r.progress = 1;
    r.message = QString::fromStdString(result.reason);
    r.result = result;
    rowChanged(row);
    refreshComparison();
}

void ComparisonModel::setObjective(Objective objective, double throughput_floor) {
    objective_ = objective;
    throughput_floor_ = throughput_floor;
    refreshComparison();
}

void ComparisonModel::refreshComparison() {
    const std::vector<PlannerResult> all = results();
    const double floor = comparisonFloor(objective_, throughput_floor_, all);
    const int reference = referenceResult(objective_, throughput_floor_, all);
    const bool floor_changed = floor != floor_, reference_changed = reference != reference_;
    floor_ = floor;
    reference_ = reference;
    if (!rows_.empty()) {
        const int last = static_cast<int>(rows_.size()) - 1;
        // Every row's Status says whether it runs below the floor.
        if (floor_changed) emit dataChanged(index(0, StatusColumn), index(last, StatusColumn));
        // Every ratio divides by the reference's metrics, which a new result may have replaced.
        emit dataChanged(index(0, ThroughputVsReferenceColumn), index(last, ThroughputVsReferenceColumn));
        emit dataChanged(index(0, MemoryEfficiencyVsReferenceColumn), index(last, MemoryEfficiencyVsReferenceColumn));
    }
    if (reference_changed) emit headerDataChanged(Qt::Horizontal, ThroughputVsReferenceColumn, MemoryEfficiencyVsReferenceColumn);
    const QString caption = makeCaption();
    if (caption == caption_) return;
    caption_ = caption;
    emit captionChanged(caption_);
}

bool ComparisonModel::belowFloor(const PlannerResult& result) const {
    return result.feasible && result.metrics.throughput_samples_per_s < floor_;
}

QString ComparisonModel::makeCaption() const {
    if (rows_.empty()) return {};
    QStringList parts{QString::fromStdString(objectiveCaption(objective_, throughput_floor_, floor_))};
    const PlannerResult* reference = result(reference_);
    // Until a baseline has a plan, "no baseline found a plan that fits" may not be true yet.
    const bool running = finishedCount() < rowCount();
    if (reference || !running) parts << QString::fromStdString(referenceCaption(reference, floor_, "×"));
    if (reference && std::any_of(rows_.begin(), rows_.end(), [this](const Row& r) { return r.result && belowFloor(*r.result); }))
        parts << QString::fromStdString(belowFloorNote());
    return parts.join(QLatin1Char(' '));
}

QVariant ComparisonModel::relativeToReference(const PlannerResult& r, int column) const {
    const PlannerResult* reference = result(reference_);
    if (!reference || !r.feasible || !hasMetrics(r)) return {};
    const TraceMetrics& m = r.metrics;
    const TraceMetrics& ref = reference->metrics;
    return column == ThroughputVsReferenceColumn ? m.throughput_samples_per_s / ref.throughput_samples_per_s
                                                 : m.memory_efficiency / ref.memory_efficiency;
}

std::vector<PlannerResult> ComparisonModel::results() const {
    std::vector<PlannerResult> out(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i)
        if (rows_[i].result) out[i] = *rows_[i].result;
    return out;
}

double ComparisonModel::floorThroughput() const { return floor_; }

void ComparisonModel::setFailed(const QString& planner, const QString& message, bool cancelled) {
    const int row = ensureRow(planner);
    Row& r = rows_[static_cast<size_t>(row)];
    r.state = cancelled ? State::Cancelled : State::Failed;
    r.message = message;
    r.result.reset();
    rowChanged(row);
    refreshComparison();
}

int ComparisonModel::rowOfPlanner(const QString& planner) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (rows_[i].planner == planner) return static_cast<int>(i);
    return -1;
}

const PlannerResult* ComparisonModel::result(int row) const {
    if (row < 0 || static_cast<size_t>(row) >= rows_.size() || !rows_[static_cast<size_t>(row)].result) return nullptr;
    return &*rows_[static_cast<size_t>(row)].result;
}

ComparisonModel::State ComparisonModel::state(int row) const { return rows_[static_cast<size_t>(row)].state; }

int ComparisonModel::bestRow(Objective objective, double throughput_floor) const {
    return bestResult(objective, throughput_floor, results());
}

bool ComparisonModel::hasMetrics(const PlannerResult& result) { return result.metrics.iteration_time_s > 0; }

int ComparisonModel::finishedCount() const {
    int n = 0;
    for (const Row& r : rows_) n += r.state != State::Running ? 1 : 0;
    return n;
}

int ComparisonModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int ComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
    // Short headers, their meaning and units in the tooltips: at 1280x800 every column shows.
    static const char* const names[] = {"Planner", "Shape",       "Micro-\nbatches", "Schedule", "Step\ntime", "Samples/s", "Thr\n× ref",
                                        "Peak\nmemory", "ME", "ME\n× ref", "Bubble",          "Plan\ntime", "Status"};
    static const char* const tips[] = {
        "The planner that produced the plan",
        "Pipeline stages × data-parallel replicas, then tensor-parallel degree (t), sequence parallelism (sp) "
        "and ZeRO stage (z); or a placement of operators on devices",
        "Micro-batches per pipeline per iteration",
        "Pipeline schedule",
        "Simulated time of one training step (an iteration: forward, backward and update of the global batch)",
        "Throughput: samples per second over the whole cluster",
        "Throughput relative to the reference plan's",
        "Largest simulated peak memory of one device",
        "Memory efficiency (samples/s/GiB): throughput per GiB of the largest device peak",
        "Memory efficiency relative to the reference plan's; * when the plan runs below the floor, so that it is no "
        "candidate under this objective whatever its ME",
        "Share of device time spent idle in the pipeline bubble",
        "Planning time: CPU time of the planner's own thread (planners run at once on shared cores), without the "
        "final scoring (lowering and simulating) of a placement plan",
        "Running, done, skipped, failed or cancelled. Red: the plan does not fit memory; grey: the planner does not "
        "take this problem. The tooltip of a row says why and lists the planner's notes (fallbacks, idle devices, a "
        "time budget reached)"};
    static_assert(std::size(names) == ColumnCount && std::size(tips) == ColumnCount);
    if (role == Qt::DisplayRole) return tr(names[section]);
    if (role != Qt::ToolTipRole) return {};
    if (section != ThroughputVsReferenceColumn && section != MemoryEfficiencyVsReferenceColumn) return tr(tips[section]);
    // Names the reference, in the caption's words.
    const PlannerResult* reference = result(reference_);
    if (!reference && finishedCount() < rowCount()) return tr(tips[section]);
    return tr(tips[section]) + QStringLiteral(".\n") + QString::fromStdString(referenceCaption(reference, floor_, "×"));
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || static_cast<size_t>(index.row()) >= rows_.size()) return {};
    const Row& row = rows_[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole: return display(row, index.column());
    case SortRole: return sortKey(row, index.column());
    case ProgressRole: return row.state == State::Running ? row.progress : -1.0;
    case Qt::ToolTipRole: {
        const QString tip = statusToolTip(index.row());
        return tip.isEmpty() ? QVariant() : QVariant(tip);
    }
    case Qt::TextAlignmentRole:
        return index.column() == PlannerColumn || index.column() == StatusColumn
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        if (row.result && row.result->skipped) return QBrush(QColor(0x6b6b6b));  // not a verdict: grey
        if (row.result && !row.result->feasible) return QBrush(QColor(0xb00020));
        return {};
    default: return {};
    }
}

QString ComparisonModel::notesText(const PlannerResult& result, const char* separator) {
    QStringList notes;
    for (const std::string& note : result.notes) notes << QString::fromStdString(note);
    return notes.join(QString::fromLatin1(separator));
}

QString ComparisonModel::statusToolTip(int row_index) const {
    if (row_index < 0 || static_cast<size_t>(row_index) >= rows_.size()) return {};
    const Row& row = rows_[static_cast<size_t>(row_index)];
    QStringList lines;
    if (row.state == State::Done && row.result && !row.result->skipped)
        lines << (row.result->feasible ? tr("fits memory") : tr("does NOT fit memory"));
    if (!row.message.isEmpty()) lines << row.message;
    if (row.result && !row.result->notes.empty()) lines << tr("notes:") << notesText(*row.result, "\n");
    return lines.join(QLatin1Char('\n'));
}

QVariant ComparisonModel::display(const Row& row, int column) const {
    if (column == PlannerColumn) return row.planner;
    if (column == StatusColumn) {
        switch (row.state) {
        case State::Running:
            return tr("running %1%").arg(qRound(row.progress * 100)) +
                   (row.message.isEmpty() ? QString() : QStringLiteral(" · ") + row.message);
        case State::Done: {
            if (row.result && row.result->skipped) return tr("skipped: %1").arg(row.message);
            QString text = row.message;
            if (row.result && !row.result->feasible)
                text = row.message.isEmpty() ? tr("does not fit") : tr("does not fit: %1").arg(row.message);
            else if (text.isEmpty())
                text = tr("fits");
            if (row.result && belowFloor(*row.result))
                text += tr(" · below the floor of %1 samples/s").arg(floor_, 0, 'f', 1);
            const int notes = row.result ? static_cast<int>(row.result->notes.size()) : 0;
            if (notes == 0) return text;
            return notes == 1 ? tr("%1 · 1 note").arg(text) : tr("%1 · %2 notes").arg(text, QString::number(notes));
        }
        case State::Failed: return tr("failed: %1").arg(row.message);
        case State::Cancelled: return tr("cancelled");
        }
    }
    if (!row.result) return {};
    const PlannerResult& r = *row.result;
    const TraceMetrics& m = r.metrics;
    if (!hasMetrics(r)) return column == PlanningTimeColumn ? formatSeconds(r.planning_time_s) : QStringLiteral("—");
    switch (column) {
    case ShapeColumn:
        return r.plan.isPlacement() ? tr("placement") : QString::fromStdString(pipelineShapeText(r.plan, "×"));
    case MicroBatchesColumn: return r.plan.micro_batches;
    case ScheduleColumn: return QString::fromLatin1(toString(r.plan.schedule));
    case IterationTimeColumn: return formatSeconds(m.iteration_time_s);
    case ThroughputColumn: return QString::number(m.throughput_samples_per_s, 'f', 1);
    case ThroughputVsReferenceColumn:
    case MemoryEfficiencyVsReferenceColumn: {
        const QVariant ratio = relativeToReference(r, column);
        if (ratio.isNull()) return QStringLiteral("—");
        const bool marked = column == MemoryEfficiencyVsReferenceColumn && belowFloor(r);
        return QString::number(ratio.toDouble(), 'f', 2) + QStringLiteral("×") + (marked ? QStringLiteral("*") : QString());
    }
    case PeakMemoryColumn: return formatBytes(m.max_peak_memory_bytes);
    case MemoryEfficiencyColumn: return QString::number(m.memory_efficiency, 'f', 2);
    case BubbleColumn: return QStringLiteral("%1%").arg(m.bubble_fraction * 100, 0, 'f', 1);
    case PlanningTimeColumn: return formatSeconds(r.planning_time_s);
    default: return {};
    }
}

QVariant ComparisonModel::sortKey(const Row& row, int column) const {
    if (column == PlannerColumn) return row.planner;
    if (column == StatusColumn) {
        // Plans that fit first (ascending), then those that do not, skipped, running, failed, cancelled.
        if (row.state != State::Done || !row.result) return 10 + static_cast<int>(row.state);
        return row.result->skipped ? 2 : row.result->feasible ? 0 : 1;
    }
    if (!row.result) return -1.0;  // running and failed rows sort below every result
    const PlannerResult& r = *row.result;
    const TraceMetrics& m = r.metrics;
    switch (column) {
    case ShapeColumn: return r.plan.deviceCount();
    case MicroBatchesColumn: return r.plan.micro_batches;
    case ScheduleColumn: return QString::fromLatin1(toString(r.plan.schedule));
    case IterationTimeColumn: return m.iteration_time_s;
    case ThroughputColumn: return m.throughput_samples_per_s;
    case ThroughputVsReferenceColumn:
    case MemoryEfficiencyVsReferenceColumn: {
        const QVariant ratio = relativeToReference(r, column);
        return ratio.isNull() ? QVariant(-1.0) : ratio;
    }
    case PeakMemoryColumn: return static_cast<double>(m.max_peak_memory_bytes);
    case MemoryEfficiencyColumn: return m.memory_efficiency;
    case BubbleColumn: return m.bubble_fraction;
    case PlanningTimeColumn: return r.planning_time_s;
    default: return {};
    }
}

}  // namespace hippie::widgets
