#pragma once
// The run history: every run in the store (state, model, cluster, planner, start, end, predicted
// and measured step time, error %), filtered by text and state. Open shows a run's views again;
// Compare puts two runs' metrics side by side; Fit cost model calibrates the run's cluster to
// its measured trace (planners/cost/calibration.h) and offers to save and use it. The store is
// read on worker threads; the page never waits on the disk.
#include <QSet>
#include <QWidget>

#include <optional>
#include <vector>

#include "app/dispatch/stored_run.h"
#include "app/store/run_store.h"
#include "planners/cluster/cluster.h"

class QComboBox;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace hippie::studio {

class MessageLabel;
using dispatch::StoredRun;

class HistoryPage : public QWidget {
    Q_OBJECT
public:
    explicit HistoryPage(QWidget* parent = nullptr);

    void setDbPath(const QString& path);
    const QString& dbPath() const { return db_path_; }
    void refresh();  // -> refreshed
    int rowCount() const;
    qint64 runAt(int row) const;
    QString cellText(int row, int column) const;
    void selectRuns(const std::vector<qint64>& runs);
    void openSelected();
    void compareSelected();
    void fitSelected();
    bool isBusy() const { return busy_ > 0; }

    static constexpr int kColumnState = 1;
    static constexpr int kColumnError = 9;

signals:
    void refreshed();
    void openRun(const hippie::dispatch::StoredRun& run);
    void useCluster(const hippie::Cluster& cluster, const QString& name);
    void calibrated(const hippie::Cluster& cluster, double error_before_percent, double error_after_percent);
    void fitNotKept(const QString& why);  // the run cannot be fitted, or the fit predicts its step worse

private:
    std::vector<qint64> selectedRuns() const;
    void showRuns(const std::vector<store::RunSummary>& runs, const QString& error);
    template <class Work, class Done>
    void inBackground(Work work, Done done);

    QString db_path_;
    QSet<QString> settled_;  // stores whose orphaned open runs were already marked lost
    QLineEdit* filter_;
    QComboBox* state_;
    QTableWidget* table_;
    QPushButton* open_;
    QPushButton* compare_;
    QPushButton* fit_;
    MessageLabel* message_;
    std::vector<store::RunSummary> runs_;
    int busy_ = 0;
};

}  // namespace hippie::studio
