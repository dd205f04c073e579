#pragma once
// The run view: one run, live or reopened from the store. Loss per step, throughput per rank per
// step and peak memory per rank (predicted beside measured), the predicted and the measured
// Gantt charts side by side on one time scale (zooming one moves the other), the predicted-vs-
// measured step time and its error, Cancel, and the stderr of the ranks that failed. Resume
// (for a failed, cancelled or lost run that wrote checkpoints) asks for the run's next attempt
// from its last checkpoint: resumeRequested, which DispatchUi starts (dispatch/run_resume.h).
#include <QPointer>
#include <QWidget>

#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/jobs/protocol.h"
#include "planners/cluster/cluster.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

class QCustomPlot;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace hippie::dispatch {
class RunController;
}
namespace hippie::store {
struct RunDetails;
}
namespace hippie::widgets {
class ScheduleView;
}

namespace hippie::studio {

class RunView : public QWidget {
    Q_OBJECT
public:
    explicit RunView(QWidget* parent = nullptr);

    void showLive(dispatch::RunController* run);  // follows it until it finishes
    // A stored run; `predicted` re-simulated from its plan, model and cluster when possible.
    void showStored(const store::RunDetails& details, const std::optional<Trace>& predicted,
                    const std::optional<Cluster>& cluster, const QString& prediction_note);

    widgets::ScheduleView* predictedView() const { return predicted_view_; }
    widgets::ScheduleView* measuredView() const { return measured_view_; }
    QString stateText() const;
    QString errorText() const;
    QString predictionTitle() const;  // "Predicted (simulated on …)" or why there is no prediction
    QString logText() const;
    QPushButton* resumeButton() const { return resume_; }
    int lossPoints() const;  // steps with a loss shown
    QCustomPlot* lossPlot() const { return loss_plot_; }
    QCustomPlot* throughputPlot() const { return throughput_plot_; }
    QCustomPlot* memoryPlot() const { return memory_plot_; }

signals:
    void resumeRequested(qint64 run_id);

private:
    struct StepPoint {
        int step = 0;
        double time_s = 0;
        double samples_per_s = 0;
        std::optional<double> loss;
    };

    void reset(const QString& title);
    void feed(const nlohmann::json& event);
    void setStateText(jobs::JobState state, const QString& message);
    void setPredicted(const std::optional<Trace>& trace, const std::optional<Cluster>& cluster, const QString& note);
    void setMeasured(const std::optional<Trace>& trace);
    void updateCharts();
    void updateError();
    void syncTimeAxes();
    void setResumable(qint64 run_id, const QString& refusal);  // empty refusal: Resume is enabled
    void showLogs(jobs::JobState state, const std::map<int, QString>& stderr_by_rank, const std::vector<int>& failed_ranks);

    QPointer<dispatch::RunController> run_;
    QLabel* title_;
    QLabel* state_;
    QLabel* error_;
    QPushButton* cancel_;
    QPushButton* resume_;
    qint64 resume_run_ = 0;
    QCustomPlot* loss_plot_;
    QCustomPlot* throughput_plot_;
    QCustomPlot* memory_plot_;
    QLabel* predicted_title_;
    QLabel* measured_title_;
    widgets::ScheduleView* predicted_view_;
    widgets::ScheduleView* measured_view_;
    QLabel* log_title_;
    QPlainTextEdit* log_;
    QWidget* body_;  // charts, Gantt charts and logs: hidden, with empty_ shown, until a run is
    QLabel* empty_;

    std::map<int, std::vector<StepPoint>> steps_;  // rank -> its steps
    std::map<int, double> peak_rss_;               // rank -> bytes, from "done"
    std::map<int, QString> rank_device_;           // rank -> "cpu", "cuda:0 (…)", from "setup"
    std::optional<Trace> predicted_, measured_;
    std::optional<Cluster> cluster_;
    std::optional<Plan> plan_;  // orders both Gantt charts' rows by stage, replica and tensor-parallel rank
    std::optional<double> measured_step_s_, predicted_step_s_;
    std::optional<int> warmup_steps_;  // steps the measured mean left out, as the engine's done says
    std::vector<int> failed_ranks_;
    std::map<int, QString> stderr_;
};

}  // namespace hippie::studio
