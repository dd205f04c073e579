#include "app/studio/dispatch/run_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "app/dispatch/run_controller.h"
#include "app/dispatch/run_resume.h"
#include "app/store/run_store.h"
#include "planners/common/error.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/trace_json.h"
#include "widgets/common/chart_legend.h"
#include "widgets/common/palette.h"
#include "widgets/common/time_units.h"
#include "widgets/common/units.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"

namespace hippie::studio {

using nlohmann::json;
using jobs::JobState;

namespace {

constexpr double kBarWidth = 0.38;
constexpr double kBarOffset = 0.1;
constexpr int kChartHeight = 230;  // an axis rect tall enough for five tick labels
constexpr double kRangeMargin = 1.02;

std::optional<double> numberAt(const json& j, const char* key) {
    if (!j.is_object()) return std::nullopt;
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

QCustomPlot* makeChart(const QString& title, const QString& x_label, const QString& y_label) {
    auto* p = new QCustomPlot;
    p->setMinimumHeight(kChartHeight);
    p->plotLayout()->insertRow(0);
    p->plotLayout()->addElement(0, 0, new QCPTextElement(p, title, QFont(QStringLiteral("sans"), 9, QFont::Bold)));
    p->xAxis->setLabel(x_label);
    p->yAxis->setLabel(y_label);
    p->legend->setVisible(true);
    p->legend->setFont(QFont(QStringLiteral("sans"), 7));
    // Under the axes: over the data it hid the latest steps, and in a column beside them it
    // left three charts side by side at 1280x800 with axes 89 px wide.
    widgets::putLegendUnderAxes(p);
    p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    return p;
}

}  // namespace

RunView::RunView(QWidget* parent)
    : QWidget(parent), title_(new QLabel), state_(new QLabel), error_(new QLabel), cancel_(new QPushButton(tr("Cancel run"))),
      resume_(new QPushButton(tr("Resume run"))),
      loss_plot_(makeChart(tr("Loss"), tr("step"), tr("loss"))),
      throughput_plot_(makeChart(tr("Throughput per rank"), tr("step"), tr("samples/s"))),
      memory_plot_(makeChart(tr("Peak memory per rank"), tr("rank"), tr("memory"))), predicted_title_(new QLabel),
      measured_title_(new QLabel), predicted_view_(new widgets::ScheduleView), measured_view_(new widgets::ScheduleView),
      log_title_(new QLabel(tr("stderr of failed ranks"))), log_(new QPlainTextEdit), body_(new QWidget), empty_(new QLabel) {
    QFont bold = title_->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.15);
    title_->setFont(bold);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    title_->setWordWrap(true);  // a long run title wraps instead of being cut at 1280 px
    state_->setWordWrap(true);
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->setWordWrap(true);
    cancel_->setEnabled(false);
    auto* head = new QHBoxLayout;
    head->addWidget(title_, 1);
    head->addWidget(cancel_);
    head->addWidget(resume_);

    auto* charts = new QHBoxLayout;
    charts->addWidget(loss_plot_);
    charts->addWidget(throughput_plot_);
    charts->addWidget(memory_plot_);

    auto column = [](QLabel* title, QWidget* view) {
        auto* w = new QWidget;
        auto* l = new QVBoxLayout(w);
        l->setContentsMargins(0, 0, 0, 0);
        l->addWidget(title);
        l->addWidget(view, 1);
        return w;
    };
    auto* gantts = new QSplitter(Qt::Horizontal);
    gantts->addWidget(column(predicted_title_, predicted_view_));
    gantts->addWidget(column(measured_title_, measured_view_));
    gantts->setChildrenCollapsible(false);

    log_->setReadOnly(true);
    log_->setMaximumHeight(110);
    log_->setFont(QFont(QStringLiteral("monospace"), 8));
    auto* body = new QVBoxLayout(body_);
    body->setContentsMargins(0, 0, 0, 0);
    body->addLayout(charts);
    body->addWidget(gantts, 1);
    body->addWidget(log_title_);
    body->addWidget(log_);
    empty_->setAlignment(Qt::AlignCenter);
    empty_->setWordWrap(true);
    empty_->setEnabled(false);  // muted, as a placeholder
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(head);
    layout->addWidget(state_);
    layout->addWidget(error_);
    layout->addWidget(body_, 1);
    layout->addWidget(empty_, 1);

    // One time scale for both charts: a zoom or pan of one moves the other.
    QCPAxis* a = predicted_view_->gantt()->keyAxis();
    QCPAxis* b = measured_view_->gantt()->keyAxis();
    connect(a, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), b, [this, b](const QCPRange& r) {
        b->setRange(r);
        measured_view_->plot()->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(b, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), a, [this, a](const QCPRange& r) {
        a->setRange(r);
        predicted_view_->plot()->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(cancel_, &QPushButton::clicked, this, [this] {
        if (run_) run_->cancel();
        cancel_->setEnabled(false);
        state_->setText(tr("Cancelling…"));
    });
    connect(resume_, &QPushButton::clicked, this, [this] {
        if (resume_run_ <= 0) return;
        resume_->setEnabled(false);  // the next attempt is shown live once it starts
        emit resumeRequested(resume_run_);
    });
    reset(tr("No run yet"));
    // Empty charts and axes from 0 to 1 said nothing: say where runs come from instead.
    body_->setVisible(false);
    empty_->setVisible(true);
    empty_->setText(tr("Select a plan on the Compare page and use Run ▸ Run selected plan on workers… (Ctrl+Shift+R), "
                       "or open a stored run from the Run history page."));
}

void RunView::reset(const QString& title) {
    body_->setVisible(true);
    empty_->setVisible(false);
    if (run_) run_->disconnect(this);
    run_ = nullptr;
    plan_.reset();
    title_->setText(title);
    state_->clear();
    error_->clear();
    steps_.clear();
    peak_rss_.clear();
    rank_device_.clear();
    predicted_.reset();
    measured_.reset();
    cluster_.reset();
    measured_step_s_.reset();
    predicted_step_s_.reset();
    warmup_steps_.reset();
    failed_ranks_.clear();
    stderr_.clear();
    predicted_title_->setText(tr("Predicted"));
    measured_title_->setText(tr("Measured"));
    predicted_view_->clear();
    measured_view_->clear();
    log_->clear();
    log_->setVisible(false);
    log_title_->setVisible(false);
    cancel_->setEnabled(false);
    setResumable(0, tr("No run is shown."));
    updateCharts();
}

void RunView::setResumable(qint64 run_id, const QString& refusal) {
    resume_run_ = refusal.isEmpty() ? run_id : 0;
    resume_->setEnabled(resume_run_ > 0);
    resume_->setToolTip(refusal.isEmpty() ? tr("Start run #%1 again from the newest checkpoint every rank wrote, with the same plan, "
                                               "steps, options and workers")
                                                .arg(run_id)
                                          : refusal);
}

void RunView::showLive(dispatch::RunController* run) {
    const QStringList workers = [run] {
        QStringList w;
        const auto& shares = run->shares();
        for (size_t i = 0; i < run->request().workers.size(); ++i) {
            const dispatch::RankShare s = i < shares.size() ? shares[i] : dispatch::RankShare{};
            w << QStringLiteral("%1 (ranks %2–%3)").arg(run->request().workers[i].label()).arg(s.first_rank).arg(s.first_rank + s.rank_count - 1);
        }
        return w;
    }();
    reset(tr("Run %1 of %2 (%3) on %4")
              .arg(run->jobId(), QString::fromStdString(run->request().plan.planner),
                   QString::fromStdString(run->request().plan.model.zoo.empty() ? run->request().plan.model.file : run->request().plan.model.zoo),
                   workers.join(QStringLiteral(", "))));
    run_ = run;
    plan_ = run->request().plan;
    cancel_->setEnabled(!run->isFinished());
    setStateText(run->state(), run->message());
    setPredicted(run->predicted(), run->cluster(), run->predictionNote());
    setMeasured(run->measured());
    connect(run, &dispatch::RunController::predictionReady, this, [this] {
        if (run_) setPredicted(run_->predicted(), run_->cluster(), run_->predictionNote());
    });
    connect(run, &dispatch::RunController::stored, this, [this](qint64 id) {
        title_->setText(title_->text() + tr(" · run #%1").arg(id));
    });
    connect(run, &dispatch::RunController::stateChanged, this, &RunView::setStateText);
    connect(run, &dispatch::RunController::slurmChanged, this, [this, base = title_->text()] {
        if (!run_ || !run_->slurmRecord() || run_->slurmRecord()->slurm_job_id.isEmpty()) return;
        const store::SlurmRecord& r = *run_->slurmRecord();
        const QString id = run_->runId() > 0 ? tr(" · run #%1").arg(run_->runId()) : QString();
        title_->setText(base + id + tr(" · Slurm job %1%2").arg(r.slurm_job_id, r.node_list.isEmpty() ? QString() : tr(" on %1").arg(r.node_list)));
    });
    connect(run, &dispatch::RunController::engineEvent, this, [this](int, qint64, const json& ev) { feed(ev); });
    connect(run, &dispatch::RunController::measuredTraceChanged, this, [this] {
        if (run_) setMeasured(run_->measured());
    });
    connect(run, &dispatch::RunController::finished, this, [this](JobState s, const QString& m) {
        cancel_->setEnabled(false);
        setStateText(s, m);
        if (!run_) return;
        showLogs(s, run_->stderrByRank(), failed_ranks_);
        // What resumeRefusal() would say of the stored run, from what the controller knows.
        if (run_->runId() <= 0) setResumable(0, tr("The run was not stored."));
        else if (s == JobState::Succeeded) setResumable(0, tr("run %1 completed (succeeded): there is nothing to resume").arg(run_->runId()));
        else if (run_->checkpointDir().isEmpty())
            setResumable(0, tr("run %1 was dispatched without checkpoints; nothing to resume from").arg(run_->runId()));
        else setResumable(run_->runId(), {});
    });
}

void RunView::showStored(const store::RunDetails& d, const std::optional<Trace>& predicted, const std::optional<Cluster>& cluster,
                         const QString& prediction_note) {
    const store::RunSummary& s = d.summary;
    reset(tr("Run #%1 (%2) of %3 (%4) on %5").arg(s.id).arg(s.job_id, s.planner, s.model, s.cluster));
    try {
        plan_ = d.plan.is_object() ? std::optional<Plan>(planFromJson(d.plan)) : std::nullopt;
    } catch (const std::exception&) {
        plan_.reset();  // a plan this version cannot read: its rows stay in device order
    }
    if (d.slurm)
        title_->setText(title_->text() + tr(" · Slurm job %1 %2 on %3").arg(d.slurm->slurm_job_id, d.slurm->state, d.slurm->node_list));
    setPredicted(predicted, cluster, prediction_note);
    for (const store::StoredEvent& e : d.events) feed(e.event);
    std::optional<Trace> measured;
    if (!d.measured_trace.is_null()) {
        try {
            measured = traceFromJson(d.measured_trace, "stored trace");
        } catch (const Error& e) {
            state_->setText(tr("The stored trace cannot be read: %1").arg(QString::fromUtf8(e.what())));
        }
    }
    setMeasured(measured);
    if (s.measured_step_s) measured_step_s_ = s.measured_step_s;
    updateError();
    setStateText(s.state, s.message);
    std::map<int, QString> logs;
    for (const auto& l : d.logs)
        if (l.stream == QLatin1String("stderr")) logs[l.rank] += l.text;
    showLogs(s.state, logs, failed_ranks_);
    setResumable(s.id, dispatch::resumeRefusal(s));
    if (s.attempt > 1) title_->setText(title_->text() + tr(" · attempt %1").arg(s.attempt));
}

void RunView::feed(const json& ev) {
    if (!ev.is_object()) return;
    const std::string kind = ev.value("event", std::string());
    const int rank = ev.contains("rank") && ev["rank"].is_number_integer() ? ev["rank"].get<int>() : -1;
    if (kind == "step" && rank >= 0) {
        StepPoint p;
        p.step = ev.value("step", 0);
        p.time_s = numberAt(ev, "time_s").value_or(0);
        p.samples_per_s = numberAt(ev, "samples_per_s").value_or(0);
        p.loss = numberAt(ev, "loss");
        // A resumed attempt runs the steps after its checkpoint again: its values are the run's.
        std::vector<StepPoint>& points = steps_[rank];
        const auto same = std::find_if(points.begin(), points.end(), [&](const StepPoint& q) { return q.step == p.step; });
        if (same != points.end()) *same = p;
        else points.push_back(p);
        updateCharts();
    } else if (kind == "setup" && rank >= 0) {
        rank_device_[rank] = QString::fromStdString(ev.value("device", std::string()));
    } else if (kind == "done" && rank >= 0) {
        if (const auto rss = numberAt(ev, "peak_rss_bytes")) peak_rss_[rank] = *rss;
        if (const auto st = numberAt(ev, "mean_step_s"); st && (!measured_step_s_ || *st > *measured_step_s_)) measured_step_s_ = st;
        if (const auto w = numberAt(ev, "warmup_steps")) warmup_steps_ = static_cast<int>(*w);
        updateCharts();
        updateError();
    } else if (kind == "error" && rank >= 0) {
        failed_ranks_.push_back(rank);
    }
}

void RunView::setStateText(JobState state, const QString& message) {
    static const std::map<JobState, QString> colours = {{JobState::Queued, QStringLiteral("#666666")},
                                                        {JobState::Running, QStringLiteral("#1f5fbf")},
                                                        {JobState::Succeeded, QStringLiteral("#1d7a2e")},
                                                        {JobState::Failed, QStringLiteral("#b02020")},
                                                        {JobState::Cancelled, QStringLiteral("#8a6d00")},
                                                        {JobState::Lost, QStringLiteral("#b02020")}};
    state_->setText(QStringLiteral("<b style='color:%1'>%2</b>%3")
                        .arg(colours.at(state), QString::fromLatin1(jobs::toString(state)),
                             message.isEmpty() ? QString() : QStringLiteral(" — ") + message.toHtmlEscaped()));
}

QString RunView::stateText() const { return state_->text(); }
QString RunView::errorText() const { return error_->text(); }
QString RunView::predictionTitle() const { return predicted_title_->text(); }
QString RunView::logText() const { return log_->toPlainText(); }

int RunView::lossPoints() const {
    int n = 0;
    for (const auto& [rank, points] : steps_)
        for (const StepPoint& p : points) n += p.loss ? 1 : 0;
    return n;
}

void RunView::setPredicted(const std::optional<Trace>& trace, const std::optional<Cluster>& cluster, const QString& note) {
    predicted_ = trace;
    cluster_ = cluster;
    if (trace) {
        predicted_view_->setTrace(*trace, cluster ? &*cluster : nullptr, plan_ ? &*plan_ : nullptr);
        predicted_step_s_ = trace->metrics.iteration_time_s;
        predicted_title_->setText(tr("<b>Predicted</b> (simulated on %1): %2 ms per step")
                                      .arg(cluster ? QString::fromStdString(cluster->name) : tr("?"))
                                      .arg(trace->metrics.iteration_time_s * 1e3, 0, 'f', 2));
    } else {
        predicted_view_->clear();
        predicted_step_s_.reset();
        predicted_title_->setText(tr("<b>Predicted</b>: %1").arg(note.isEmpty() ? tr("waiting for the prediction…") : note.toHtmlEscaped()));
    }
    syncTimeAxes();
    updateCharts();
    updateError();
}

void RunView::setMeasured(const std::optional<Trace>& trace) {
    measured_ = trace;
    if (trace) {
        // The prediction's cluster labels the rows alike when the measured devices are in it.
        const bool fits = cluster_ && !trace->devices.empty() &&
                          *std::max_element(trace->devices.begin(), trace->devices.end()) < cluster_->deviceCount();
        // Ranks say where they ran ("setup"): on this machine's CPUs the rows read "CPU n",
        // whatever GPU cluster the plan was made for.
        const bool on_cpu = !rank_device_.empty() && std::all_of(rank_device_.begin(), rank_device_.end(), [](const auto& rd) {
            return rd.second.startsWith(QLatin1String("cpu"), Qt::CaseInsensitive);
        });
        measured_view_->setDeviceNoun(on_cpu ? QStringLiteral("CPU") : QString());
        measured_view_->setTrace(*trace, fits && !on_cpu ? &*cluster_ : nullptr, plan_ ? &*plan_ : nullptr);
        measured_title_->setText(tr("<b>Measured</b> (the last step of %1 ranks): %2 ms")
                                     .arg(trace->devices.size())
                                     .arg(trace->metrics.iteration_time_s * 1e3, 0, 'f', 2));
    } else {
        measured_view_->clear();
        measured_title_->setText(tr("<b>Measured</b>: the ranks send their trace after the last step"));
    }
    syncTimeAxes();
    updateCharts();
}

void RunView::syncTimeAxes() {
    double end = 0;
    // As the views count it: the last event or the step's time, whichever is later.
    if (predicted_) end = std::max(end, predicted_view_->endTime());
    if (measured_) end = std::max(end, measured_view_->endTime());
    // Each view keeps its range within its own trace: both must allow the longer one, or the
    // shorter view clamps the linked range and cuts the other's chart.
    predicted_view_->setSharedEndTime(end * kRangeMargin);
    measured_view_->setSharedEndTime(end * kRangeMargin);
    if (end <= 0) return;
    const QCPRange r(0, end * kRangeMargin);
    predicted_view_->gantt()->keyAxis()->setRange(r);
    measured_view_->gantt()->keyAxis()->setRange(r);
    predicted_view_->plot()->replot();
    measured_view_->plot()->replot();
}

void RunView::updateError() {
    // What the measured mean leaves out: the engine's done event says; a run stored before it
    // did (or a stored summary) says only that the warm-up is left out.
    const QString mean = warmup_steps_ ? tr("mean of the steps after the first %n", nullptr, *warmup_steps_) : tr("mean of the steps after the warm-up");
    QString text;
    if (measured_step_s_ && predicted_step_s_ && *predicted_step_s_ > 0) {
        const double e = (*measured_step_s_ - *predicted_step_s_) / *predicted_step_s_ * 100.0;
        text = tr("Step time: predicted %1 ms, measured %2 ms (%3) — error %4%5 %")
                   .arg(*predicted_step_s_ * 1e3, 0, 'f', 2)
                   .arg(*measured_step_s_ * 1e3, 0, 'f', 2)
                   .arg(mean)
                   .arg(e >= 0 ? QStringLiteral("+") : QString())
                   .arg(e, 0, 'f', 1);
    } else if (measured_step_s_) {
        text = tr("Measured %1 ms per step (%2); no prediction to compare.").arg(*measured_step_s_ * 1e3, 0, 'f', 2).arg(mean);
    }
    // The engine processes' RSS (LibTorch itself included) is not what the cost model predicts:
    // said here, not beside the predicted bars (in the chart's title it was cut at 1280 px).
    double rss = 0;
    for (const auto& [rank, bytes] : peak_rss_) rss = std::max(rss, bytes);
    if (rss > 0)
        text += (text.isEmpty() ? QString() : QStringLiteral(" · ")) +
                tr("engine processes' peak RSS up to %1").arg(widgets::formatBytes(static_cast<int64_t>(rss)));
    error_->setText(text);
}

void RunView::updateCharts() {
    loss_plot_->clearPlottables();
    throughput_plot_->clearPlottables();
    memory_plot_->clearPlottables();
    int colour = 0;
    for (const auto& [rank, points] : steps_) {
        QVector<double> x, loss, sps;
        QVector<double> xl;
        for (const StepPoint& p : points) {
            x << p.step;
            sps << p.samples_per_s;
            if (p.loss) {
                xl << p.step;
                loss << *p.loss;
            }
        }
        const QColor c = widgets::seriesColor(colour++);
        if (!loss.isEmpty()) {
            QCPGraph* g = loss_plot_->addGraph();
            g->setData(xl, loss);
            g->setPen(QPen(c, 2));
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
            g->setName(tr("rank %1").arg(rank));
        }
        QCPGraph* t = throughput_plot_->addGraph();
        t->setData(x, sps);
        t->setPen(QPen(c, 2));
        t->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
        t->setName(tr("rank %1").arg(rank));
    }
    // Peak memory: the prediction's per device, the measured tracked bytes per rank, and RSS.
    auto bars = [this](const QString& name, const QColor& c) {
        auto* b = new QCPBars(memory_plot_->xAxis, memory_plot_->yAxis);
        b->setName(name);
        b->setWidth(kBarWidth / 2);
        b->setPen(QPen(c.darker(130)));
        b->setBrush(c);
        return b;
    };
    // In the unit of the largest bar: a tiny model's ranks read "0.2 MiB", not "0.0002 GiB".
    double largest = 0;
    for (const std::optional<Trace>* t : {&predicted_, &measured_})
        if (*t)
            for (int64_t bytes : (*t)->metrics.peak_memory_bytes) largest = std::max(largest, static_cast<double>(bytes));
    const widgets::ByteUnit unit = widgets::byteUnitFor(largest);
    memory_plot_->yAxis->setLabel(largest > 0 ? tr("memory (%1)").arg(QString::fromUtf8(unit.name)) : tr("memory"));
    if (predicted_) {
        QCPBars* b = bars(tr("predicted"), widgets::seriesColor(0));
        for (size_t i = 0; i < predicted_->devices.size() && i < predicted_->metrics.peak_memory_bytes.size(); ++i)
            b->addData(predicted_->devices[i] - kBarOffset, static_cast<double>(predicted_->metrics.peak_memory_bytes[i]) * unit.per_byte);
    }
    if (measured_) {
        QCPBars* b = bars(tr("measured (tracked tensors)"), widgets::seriesColor(1));
        for (size_t i = 0; i < measured_->devices.size() && i < measured_->metrics.peak_memory_bytes.size(); ++i)
            b->addData(measured_->devices[i] + kBarOffset, static_cast<double>(measured_->metrics.peak_memory_bytes[i]) * unit.per_byte);
    }
    // Whole steps and ranks, but as many as fit: a label per step merges into a bar past ~50.
    QSharedPointer<QCPAxisTickerFixed> integer(new QCPAxisTickerFixed);
    integer->setTickStep(1);
    integer->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    memory_plot_->xAxis->setTicker(integer);
    loss_plot_->xAxis->setTicker(integer);
    throughput_plot_->xAxis->setTicker(integer);
    // The ranks heard of so far: an empty peak-memory chart still spans them.
    int ranks = 1;
    for (const auto& [rank, points] : steps_) ranks = std::max(ranks, rank + 1);
    for (const auto& [rank, device] : rank_device_) ranks = std::max(ranks, rank + 1);
    for (QCustomPlot* p : {loss_plot_, throughput_plot_, memory_plot_}) {
        p->legend->setVisible(p->plottableCount() > 0);
        widgets::fitLegendColumns(p);
        p->yAxis->setTickLabels(p->plottableCount() > 0);
        if (p->plottableCount() == 0) {
            // Nothing to draw (no prediction, nothing measured yet): a fixed frame. rescaleAxes
            // keeps an empty chart's range, which the padding below widened at every update
            // (to ranks -50..50 and 600000 "memory" in a live run).
            p->xAxis->setRange(-0.5, p == memory_plot_ ? ranks - 0.5 : 0.5);
            p->yAxis->setRange(0, 1);
            p->replot(QCustomPlot::rpQueuedReplot);
            continue;
        }
        p->rescaleAxes();
        const QCPRange x = p->xAxis->range();
        p->xAxis->setRange(x.lower - 0.5, x.upper + 0.5);
        const QCPRange y = p->yAxis->range();
        const double pad = std::max(1e-9, (y.upper - y.lower) * 0.1);
        if (p == memory_plot_) p->yAxis->setRange(0, y.upper + pad);
        else p->yAxis->setRange(y.lower - pad, y.upper + pad);
        p->replot(QCustomPlot::rpQueuedReplot);
    }
}

void RunView::showLogs(JobState state, const std::map<int, QString>& stderr_by_rank, const std::vector<int>& failed_ranks) {
    if (state != JobState::Failed && state != JobState::Lost) {
        log_->setVisible(false);
        log_title_->setVisible(false);
        return;
    }
    QString text;
    for (const auto& [rank, err] : stderr_by_rank) {
        const bool failed = std::find(failed_ranks.begin(), failed_ranks.end(), rank) != failed_ranks.end();
        if (!failed && !failed_ranks.empty()) continue;
        text += tr("── rank %1 ──\n").arg(rank) + err.trimmed() + QLatin1Char('\n');
    }
    if (text.isEmpty()) text = tr("No rank wrote to stderr.");
    log_->setPlainText(text);
    log_->setVisible(true);
    log_title_->setVisible(true);
}

}  // namespace hippie::studio
