#include "app/studio/dispatch/history_page.h"

#include "app/dispatch/lost_runs.h"

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <map>
#include <set>

#include "app/dispatch/lost_runs.h"
#include "app/studio/dispatch/run_comparison.h"
#include "app/studio/message_label.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/cost/calibration.h"

namespace hippie::studio {

namespace {

using store::RunState;
using store::RunSummary;
using dispatch::loadStoredRun;

QString timeText(qint64 ms) {
    return ms > 0 ? QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : QStringLiteral("–");
}

QString msText(const std::optional<double>& s) { return s ? QString::number(*s * 1e3, 'f', 2) : QStringLiteral("–"); }

QTableWidgetItem* item(const QString& text, const QVariant& sort = {}) {
    auto* it = new QTableWidgetItem(text);
    it->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    if (sort.isValid()) it->setData(Qt::UserRole, sort);
    return it;
}

struct Listing {
    std::vector<RunSummary> runs;
    QString error;
};

}  // namespace

template <class Work, class Done>
void HistoryPage::inBackground(Work work, Done done) {
    using Result = decltype(work());
    auto* watcher = new QFutureWatcher<Result>(this);
    ++busy_;
    connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, done] {
        --busy_;
        done(watcher->result());
        watcher->deleteLater();
    });
    watcher->setFuture(QtConcurrent::run(work));
}

HistoryPage::HistoryPage(QWidget* parent)
    : QWidget(parent), db_path_(store::RunStore::defaultPath()), filter_(new QLineEdit), state_(new QComboBox),
      table_(new QTableWidget), open_(new QPushButton(tr("Open"))), compare_(new QPushButton(tr("Compare two"))),
      fit_(new QPushButton(tr("Fit cost model"))), message_(new MessageLabel) {
    filter_->setPlaceholderText(tr("Filter by model, cluster, planner or job id"));
    filter_->setClearButtonEnabled(true);
    state_->addItem(tr("Every state"), QString());
    for (RunState s : {RunState::Queued, RunState::Running, RunState::Succeeded, RunState::Failed, RunState::Cancelled, RunState::Lost})
        state_->addItem(store::runStateName(s), store::runStateName(s));
    auto* refresh = new QPushButton(tr("Refresh"));
    open_->setToolTip(tr("Show the run's charts and Gantt charts again"));
    compare_->setToolTip(tr("Put the metrics of two selected runs side by side"));
    fit_->setToolTip(tr("Fit the cluster's device efficiency and link bandwidths to this run's measured trace"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(filter_, 1);
    bar->addWidget(state_);
    bar->addWidget(refresh);
    bar->addSpacing(12);
    bar->addWidget(open_);
    bar->addWidget(compare_);
    bar->addWidget(fit_);

    const QStringList headers = {tr("Run"), tr("State"), tr("Model"), tr("Cluster"), tr("Planner"), tr("Started"),
                                 tr("Ended"), tr("Predicted ms/step"), tr("Measured ms/step"), tr("Error %"), tr("Message")};
    table_->setColumnCount(static_cast<int>(headers.size()));
    table_->setHorizontalHeaderLabels(headers);
    table_->verticalHeader()->setVisible(false);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setSortingEnabled(false);
    table_->setObjectName(QStringLiteral("run-history"));

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(table_, 1);
    layout->addWidget(message_);

    connect(refresh, &QPushButton::clicked, this, &HistoryPage::refresh);
    connect(filter_, &QLineEdit::textChanged, this, &HistoryPage::refresh);
    connect(state_, &QComboBox::currentIndexChanged, this, &HistoryPage::refresh);
    connect(open_, &QPushButton::clicked, this, &HistoryPage::openSelected);
    connect(compare_, &QPushButton::clicked, this, &HistoryPage::compareSelected);
    connect(fit_, &QPushButton::clicked, this, &HistoryPage::fitSelected);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this] { openSelected(); });
}

void HistoryPage::setDbPath(const QString& path) {
    db_path_ = path;
    refresh();
}

void HistoryPage::refresh() {
    store::RunFilter f;
    f.text = filter_->text().trimmed();
    const QString state = state_->currentData().toString();
    if (!state.isEmpty()) f.state = jobs::jobStateFromString(state.toStdString());
    const QString db = db_path_;
    // The first listing of a store also settles the runs a dead studio left open (lost_runs.h).
    const bool settle_open_runs = !settled_.contains(db);
    settled_.insert(db);
    inBackground(
        [db, f, settle_open_runs]() -> Listing {
            Listing l;
            try {
                store::RunStore s(db);
                if (settle_open_runs) dispatch::markUnreachableRunsLost(s);
                l.runs = s.listRuns(f);
            } catch (const std::exception& e) {
                l.error = QString::fromUtf8(e.what());
            }
            return l;
        },
        [this](const Listing& l) {
            showRuns(l.runs, l.error);
            emit refreshed();
        });
}

void HistoryPage::showRuns(const std::vector<RunSummary>& runs, const QString& error) {
    if (!error.isEmpty()) {
        message_->showError(tr("The run store cannot be read: %1").arg(error));
        return;
    }
    const std::vector<qint64> keep = selectedRuns();
    runs_ = runs;
    table_->setRowCount(static_cast<int>(runs.size()));
    for (int row = 0; row < static_cast<int>(runs.size()); ++row) {
        const RunSummary& r = runs[static_cast<size_t>(row)];
        const std::optional<double> err = r.errorPercent();
        table_->setItem(row, 0, item(QStringLiteral("#%1").arg(r.id), r.id));
        QTableWidgetItem* st = item(store::runStateName(r.state));
        const bool bad = r.state == RunState::Failed || r.state == RunState::Lost;
        st->setForeground(bad ? QColor(0xb0, 0x20, 0x20) : r.state == RunState::Succeeded ? QColor(0x1d, 0x7a, 0x2e) : QColor(0x55, 0x55, 0x55));
        table_->setItem(row, kColumnState, st);
        table_->setItem(row, 2, item(r.model));
        table_->setItem(row, 3, item(r.cluster));
        table_->setItem(row, 4, item(r.planner));
        table_->setItem(row, 5, item(timeText(r.started_ms ? r.started_ms : r.created_ms)));
        table_->setItem(row, 6, item(timeText(r.ended_ms)));
        table_->setItem(row, 7, item(msText(r.predicted_step_s)));
        table_->setItem(row, 8, item(msText(r.measured_step_s)));
        table_->setItem(row, kColumnError, item(err ? QStringLiteral("%1%2").arg(*err >= 0 ? QStringLiteral("+") : QString()).arg(*err, 0, 'f', 1)
                                                    : QStringLiteral("–")));
        table_->setItem(row, 10, item(r.message));
    }
    table_->resizeColumnsToContents();
    selectRuns(keep);
    // Under the home directory as "~/...", as a shell would print it.
    const QString home = QDir::homePath();
    const QString shown = db_path_.startsWith(home + QLatin1Char('/')) ? QStringLiteral("~") + db_path_.mid(home.size()) : db_path_;
    message_->showInfo(tr("%n run(s) in %1", nullptr, static_cast<int>(runs.size())).arg(shown));
}

int HistoryPage::rowCount() const { return table_->rowCount(); }
qint64 HistoryPage::runAt(int row) const { return runs_[static_cast<size_t>(row)].id; }
QString HistoryPage::cellText(int row, int column) const {
    const QTableWidgetItem* it = table_->item(row, column);
    return it ? it->text() : QString();
}

std::vector<qint64> HistoryPage::selectedRuns() const {
    std::set<int> rows;
    for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rows.insert(i.row());
    std::vector<qint64> out;
    for (int r : rows)
        if (r < static_cast<int>(runs_.size())) out.push_back(runs_[static_cast<size_t>(r)].id);
    return out;
}

void HistoryPage::selectRuns(const std::vector<qint64>& runs) {
    table_->clearSelection();
    for (int row = 0; row < static_cast<int>(runs_.size()); ++row)
        if (std::find(runs.begin(), runs.end(), runs_[static_cast<size_t>(row)].id) != runs.end())
            table_->selectionModel()->select(table_->model()->index(row, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

void HistoryPage::openSelected() {
    const std::vector<qint64> runs = selectedRuns();
    if (runs.size() != 1) {
        message_->showError(tr("Select one run to open."));
        return;
    }
    const QString db = db_path_;
    const qint64 id = runs.front();
    inBackground([db, id] { return loadStoredRun(db, id); },
                 [this](const StoredRun& r) {
                     if (!r.error.isEmpty()) message_->showError(r.error);
                     else emit openRun(r);
                 });
}


void HistoryPage::compareSelected() {
    const std::vector<qint64> runs = selectedRuns();
    if (runs.size() != 2) {
        message_->showError(tr("Select exactly two runs to compare (Ctrl+click)."));
        return;
    }
    const QString db = db_path_;
    const qint64 a = runs[0], b = runs[1];
    inBackground([db, a, b] { return std::make_pair(loadStoredRun(db, a), loadStoredRun(db, b)); },
                 [this](const std::pair<StoredRun, StoredRun>& two) {
                     for (const StoredRun* r : {&two.first, &two.second})
                         if (!r->error.isEmpty()) {
                             message_->showError(r->error);
                             return;
                         }
                     const std::vector<ComparedRow> rows = compareRuns(two.first, two.second);
                     const RunSummary& x = two.first.details.summary;
                     const RunSummary& y = two.second.details.summary;
                     auto* d = new QDialog(this);
                     d->setAttribute(Qt::WA_DeleteOnClose);
                     d->setObjectName(QStringLiteral("compare-runs"));
                     d->setWindowTitle(tr("Run #%1 and run #%2").arg(x.id).arg(y.id));
                     auto* t = new QTableWidget(static_cast<int>(rows.size()), 2, d);
                     t->setHorizontalHeaderLabels({tr("Run #%1").arg(x.id), tr("Run #%1").arg(y.id)});
                     QStringList names;
                     for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
                         const ComparedRow& r = rows[static_cast<size_t>(i)];
                         names << r.name;
                         t->setItem(i, 0, item(r.first));
                         t->setItem(i, 1, item(r.second));
                     }
                     t->setVerticalHeaderLabels(names);
                     t->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
                     auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, d);
                     connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::close);
                     auto* l = new QVBoxLayout(d);
                     l->addWidget(t);
                     l->addWidget(buttons);
                     d->resize(720, 480);
                     d->show();
                 });
}

void HistoryPage::fitSelected() {
    const std::vector<qint64> runs = selectedRuns();
    if (runs.size() != 1) {
        message_->showError(tr("Select one succeeded run to fit the cost model to."));
        return;
    }
    struct Fit {
        QString error;
        std::optional<CalibrationResult> result;
    };
    const QString db = db_path_;
    const qint64 id = runs.front();
    message_->showInfo(tr("Fitting the cost model to run #%1…").arg(id));
    inBackground(
        [db, id]() -> Fit {
            try {
                return {{}, dispatch::calibrateStoredRun(loadStoredRun(db, id), id)};
            } catch (const Error& e) {
                return {QString::fromUtf8(e.what()), std::nullopt};
            }
        },
        [this, id](const Fit& f) {
            if (!f.result) {
                message_->showError(tr("Cannot fit the cost model: %1").arg(f.error));
                emit fitNotKept(f.error);
                return;
            }
            const CalibrationResult& r = *f.result;
            QStringList factors;
            for (const std::string& line : r.describeFactors()) factors << QString::fromStdString(line);
            QString text = tr("Fitted to run #%1 (%2 compute and %3 communication events):\n%4\n\n"
                              "Event time error: %5 % before, %6 % after.\n"
                              "Step time error: %7 % before, %8 % after.")
                               .arg(id)
                               .arg(r.compute_events)
                               .arg(r.communication_events)
                               .arg(factors.isEmpty() ? tr("nothing could be fitted") : factors.join(QStringLiteral("\n")))
                               .arg(r.event_error_before_percent, 0, 'f', 1)
                               .arg(r.event_error_after_percent, 0, 'f', 1)
                               .arg(r.errorBeforePercent(), 0, 'f', 1)
                               .arg(r.errorAfterPercent(), 0, 'f', 1);
            if (!r.accepted) {
                text += QStringLiteral("\n\n") + tr("Not kept: %1.").arg(QString::fromStdString(r.refusal));
                message_->showError(text.simplified());
                emit fitNotKept(text);
                return;
            }
            message_->showInfo(text.simplified());
            emit calibrated(r.cluster, r.errorBeforePercent(), r.errorAfterPercent());
            QMessageBox box(this);
            box.setWindowTitle(tr("Fit cost model"));
            box.setText(text);
            QPushButton* save = box.addButton(tr("Save cluster…"), QMessageBox::ActionRole);
            QPushButton* use = box.addButton(tr("Use it"), QMessageBox::AcceptRole);
            box.addButton(QMessageBox::Close);
            box.exec();
            if (box.clickedButton() == save) {
                const QString path = QFileDialog::getSaveFileName(this, tr("Save calibrated cluster"), QString::fromStdString(r.cluster.name) + QStringLiteral(".json"),
                                                                  tr("Cluster JSON (*.json)"));
                if (!path.isEmpty()) {
                    try {
                        saveClusterFile(r.cluster, path.toStdString());
                        message_->showInfo(tr("Saved %1").arg(path));
                    } catch (const Error& e) {
                        message_->showError(QString::fromUtf8(e.what()));
                    }
                }
            }
            if (box.clickedButton() == use || box.clickedButton() == save) emit useCluster(r.cluster, QString::fromStdString(r.cluster.name));
        });
}

}  // namespace hippie::studio
