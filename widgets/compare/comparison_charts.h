#pragma once
// Charts of a ComparisonModel read at a glance: bars of throughput, peak memory and memory
// efficiency per planner, and a throughput-versus-memory scatter with the Pareto front. A point
// is labelled with its planner and its plan's shape (the table's Shape column), a bar with its
// planner; hovering either shows both and its value. They follow the model as rows arrive; the
// selected planner is outlined.
#include <QHash>
#include <QRectF>
#include <QWidget>

#include <vector>

class QAbstractItemModel;
class QCPAbstractPlottable;
class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPItemText;
class QTimer;

namespace hippie::widgets {

class ComparisonModel;

class ComparisonCharts : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonCharts(ComparisonModel* model, QWidget* parent = nullptr);

    void setSelectedRow(int model_row);
    int plottedCount() const { return plotted_; }  // planners with a result in the charts
    int paretoCount() const { return pareto_; }
    QCustomPlot* plot() const { return plot_; }
    int labelOverlaps() const { return overlappingLabels(); }
    int labelsCoveringDots() const;  // scatter names over a dot, after separateLabels(), for tests
    // "hippie 4×2 t2 z1" beside a point; the planner alone without a shape.
    static QString pointLabel(const QString& planner, const QString& shape);
    // The tooltip of the bar or point at `pos` (in the plot's pixels): planner, shape, value.
    QString toolTipAt(const QPointF& pos) const;

public slots:
    void rebuild();

private:
    void addBars(QCPAxisRect* rect, const QVector<double>& values, const QVector<QString>& names, const QVector<QString>& shapes,
                 const QString& label, int decimals, int highlight);
    void addScatter(QCPAxisRect* rect, const QVector<double>& memory, const QVector<double>& throughput,
                    const QVector<QString>& names, const QVector<QString>& shapes, const QVector<bool>& feasible,
                    int highlight);

    // Moves scatter labels that would cover one another apart, in pixels, once the axes are
    // laid out (called before every draw): close but distinct points get labels apart.
    void separateLabels();
    // Texts that overlap after separateLabels() (0 unless there is no room), for tests.
    int overlappingLabels() const;

    // The names of one group of close points: one text a line, placed together on one side
    // of the group's centre.
    struct ScatterLabel {
        std::vector<QCPItemText*> lines;
        int line_px = 0;
        std::vector<QString> names;  // each line's planner alone: where "name shape" finds no free place
    };
    std::vector<ScatterLabel> labels_;
    struct ScatterDot {
        QCPAxis* x;
        QCPAxis* y;
        double memory_gib, throughput, size_px;
    };
    std::vector<ScatterDot> dots_;
    std::vector<QRectF> dotRects() const;  // in pixels, as drawn
    QHash<const QCPAbstractPlottable*, QString> tips_;  // a bar's or point's tooltip
    ComparisonModel* model_;
    QCustomPlot* plot_;
    QTimer* rebuild_timer_;
    int selected_row_ = -1;
    int plotted_ = 0;
    int pareto_ = 0;
};

}  // namespace hippie::widgets
