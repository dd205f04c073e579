#pragma once
// Charts of a ComparisonModel read at a glance: bars of throughput, peak memory and memory
// efficiency per planner, and a throughput-versus-memory scatter with the Pareto front. They
// follow the model as rows arrive; the selected planner is outlined.
#include <QWidget>

class QAbstractItemModel;
class QCustomPlot;
class QCPAxisRect;
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

public slots:
    void rebuild();

private:
    void addBars(QCPAxisRect* rect, const QVector<double>& values, const QVector<QString>& names, const QString& label,
                 int highlight);
    void addScatter(QCPAxisRect* rect, const QVector<double>& memory, const QVector<double>& throughput,
                    const QVector<QString>& names, const QVector<bool>& feasible, int highlight);

    ComparisonModel* model_;
    QCustomPlot* plot_;
    QTimer* rebuild_timer_;
    int selected_row_ = -1;
    int plotted_ = 0;
    int pareto_ = 0;
};

}  // namespace hippie::widgets
