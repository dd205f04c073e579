#include "app/studio/dispatch/workers_panel.h"

#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

#include "app/jobs/launcher.h"
#include "app/studio/dispatch/slurm_cluster_dialog.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"

namespace hippie::studio {

using nlohmann::json;

namespace {

constexpr int kColumnWorker = 0;
constexpr int kColumnState = 1;
constexpr int kColumnDevices = 2;
constexpr double kProbeSeconds = 0.5;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGiga = 1e9;
constexpr int kRetryMs = 10000;  // an unreachable or lost agent is tried again this often

QString devicesText(const json& cluster) {
    if (!cluster.is_object()) return QObject::tr("not probed");
    try {
        const Cluster c = clusterFromJson(cluster, "probe");
        QStringList parts;
        for (const Node& n : c.nodes)
            parts << QObject::tr("%1 x %2 (%3 GFLOP/s, %4 GiB, %5 for tensors)")
                         .arg(n.devices)
                         .arg(QString::fromStdString(n.device.type))
                         .arg(n.device.achievableFlops(Precision::FP32) / kGiga, 0, 'f', 1)
                         .arg(static_cast<double>(n.device.memory_bytes) / kGiB, 0, 'f', 1)
                         .arg(static_cast<double>(n.device.usableBytes()) / kGiB, 0, 'f', 1);
        return parts.join(QStringLiteral("; "));
    } catch (const Error& e) {
        return QObject::tr("probe answer unreadable: %1").arg(QString::fromUtf8(e.what()));
    }
}

// The "Add agent" form.
class AddAgentDialog : public QDialog {
public:
    explicit AddAgentDialog(QWidget* parent) : QDialog(parent) {
        setWindowTitle(tr("Add a worker agent"));
        host_ = new QLineEdit(QStringLiteral("127.0.0.1"));
        port_ = new QSpinBox;
        port_->setRange(1, 65535);
        port_->setValue(jobs::kDefaultAgentPort);
        token_ = new QLineEdit;
        token_->setEchoMode(QLineEdit::Password);
        token_->setPlaceholderText(tr("the agent's --token-file contents"));
        fingerprint_ = new QLineEdit;
        fingerprint_->setPlaceholderText(tr("optional: SHA-256 of the agent's TLS certificate"));
        remember_ = new QCheckBox(tr("Remember the token on this computer"));
        auto* form = new QFormLayout;
        form->addRow(tr("Host"), host_);
        form->addRow(tr("Port"), port_);
        form->addRow(tr("Token"), token_);
        form->addRow(tr("TLS fingerprint"), fingerprint_);
        form->addRow(remember_);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
        connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
        connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
        auto* layout = new QVBoxLayout(this);
        layout->addLayout(form);
        layout->addWidget(buttons);
    }
    jobs::AgentAddress address() const {
        jobs::AgentAddress a;
        a.host = host_->text().trimmed();
        a.port = static_cast<quint16>(port_->value());
        a.token = token_->text().trimmed();
        a.fingerprint_sha256 = fingerprint_->text().trimmed();
        return a;
    }
    bool remember() const { return remember_->isChecked(); }

private:
    QLineEdit* host_;
    QSpinBox* port_;
    QLineEdit* token_;
    QLineEdit* fingerprint_;
    QCheckBox* remember_;
};

}  // namespace

WorkersPanel::WorkersPanel(bool use_settings, QWidget* parent)
    : QWidget(parent), use_settings_(use_settings), list_(new QTreeWidget), remove_(new QPushButton(tr("Remove"))),
      probe_(new QPushButton(tr("Probe"))), use_(new QPushButton(tr("Use as cluster"))), message_(new QLabel) {
    list_->setColumnCount(3);
    list_->setHeaderLabels({tr("Worker"), tr("State"), tr("Devices")});
    list_->setRootIsDecorated(false);
    list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    list_->setObjectName(QStringLiteral("workers-list"));
    message_->setWordWrap(true);
    message_->setVisible(false);  // its empty line cost the Setup dock above the height of a row
    auto* add = new QPushButton(tr("Add agent…"));
    add->setToolTip(tr("Connect to a hippie-agent on a GPU host"));
    use_->setToolTip(tr("Turn the selected probed workers (all probed ones if none is selected) into the planners' cluster"));
    auto* add_slurm = new QPushButton(tr("Add Slurm cluster…"));
    add_slurm->setObjectName(QStringLiteral("add-slurm"));
    add_slurm->setToolTip(tr("Run plans through sbatch on a Slurm cluster, here or on a login host over ssh"));
    // Two rows: in one, the five buttons made the left dock column 500 px wide, two fifths of a
    // 1280 px screen, and squeezed every page beside it.
    auto* buttons = new QGridLayout;
    buttons->addWidget(add, 0, 0);
    buttons->addWidget(add_slurm, 0, 1);
    buttons->addWidget(remove_, 0, 2);
    buttons->addWidget(probe_, 1, 0);
    buttons->addWidget(use_, 1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(list_, 1);
    layout->addLayout(buttons);
    layout->addWidget(message_);

    connect(add, &QPushButton::clicked, this, &WorkersPanel::onAddClicked);
    connect(add_slurm, &QPushButton::clicked, this, &WorkersPanel::onAddSlurmClicked);
    connect(remove_, &QPushButton::clicked, this, [this] {
        const int row = list_->indexOfTopLevelItem(list_->currentItem());
        if (row > 0) removeWorker(row);
    });
    connect(probe_, &QPushButton::clicked, this, [this] {
        const QList<QTreeWidgetItem*> items = list_->selectedItems();
        if (items.isEmpty()) {
            for (int i = 0; i < count(); ++i) probe(i);
            return;
        }
        for (QTreeWidgetItem* it : items) probe(list_->indexOfTopLevelItem(it));
    });
    connect(use_, &QPushButton::clicked, this, &WorkersPanel::onUseClicked);
    connect(list_, &QTreeWidget::currentItemChanged, this, [this] { remove_->setEnabled(list_->indexOfTopLevelItem(list_->currentItem()) > 0); });
    remove_->setEnabled(false);

    Worker local;
    local.local = true;
    local.state = engine().isEmpty() ? tr("hippie-engine is not built/installed") : tr("ready");
    workers_.push_back(local);
    list_->addTopLevelItem(new QTreeWidgetItem);
    refreshRow(0);
    retry_ = new QTimer(this);
    retry_->setInterval(kRetryMs);
    connect(retry_, &QTimer::timeout, this, &WorkersPanel::retryUnreachable);
    retry_->start();
    if (use_settings_) load();
}

void WorkersPanel::say(const QString& message) {
    message_->setText(message);
    message_->setVisible(!message.isEmpty());
}

void WorkersPanel::setRetryInterval(int ms) { retry_->setInterval(ms); }

bool WorkersPanel::isRetrying(int i) const {
    const QString& s = workers_[static_cast<size_t>(i)].state;
    return !workers_[static_cast<size_t>(i)].local && (s.startsWith(tr("unreachable")) || s.startsWith(tr("lost")));
}

void WorkersPanel::retryUnreachable() {
    // A refused agent (wrong token, wrong pin) stays refused: trying again would not change that.
    for (int i = 1; i < count(); ++i)
        if (isRetrying(i)) connectAgent(i, true);
}

WorkersPanel::~WorkersPanel() {
    if (local_probe_) {
        local_probe_->disconnect(this);
        local_probe_->kill();
        local_probe_->waitForFinished(1000);
    }
}

QString WorkersPanel::engine() const { return jobs::findEngine(engine_); }

void WorkersPanel::setEngine(const QString& engine) {
    engine_ = engine;
    workers_[0].devices = nullptr;  // probed with another engine
    setState(0, this->engine().isEmpty() ? tr("hippie-engine is not built/installed") : tr("ready"));
}

QString WorkersPanel::label(int i) const {
    const Worker& w = workers_[static_cast<size_t>(i)];
    if (w.slurm) return w.slurm->login_host.isEmpty() ? tr("Slurm cluster (sbatch here)") : tr("Slurm cluster via %1").arg(w.slurm->login_host);
    return w.local ? tr("This machine") : w.address.display() + (w.address.fingerprint_sha256.isEmpty() ? QString() : tr(" (TLS)"));
}

std::optional<jobs::AgentAddress> WorkersPanel::agentAt(const QString& host, quint16 port) const {
    for (const Worker& w : workers_)
        if (!w.local && !w.slurm && w.address.host == host && w.address.port == port) return w.address;
    return std::nullopt;
}

dispatch::WorkerTarget WorkersPanel::target(int i) const {
    const Worker& w = workers_[static_cast<size_t>(i)];
    dispatch::WorkerTarget t;
    t.local = w.local;
    t.slurm = w.slurm;
    t.address = w.address;
    if (w.devices.is_object()) {
        try {
            t.capacity = clusterFromJson(w.devices, "probe").deviceCount();
        } catch (const Error&) {
            t.capacity = 0;
        }
    }
    return t;
}

int WorkersPanel::addSlurm(const dispatch::SlurmTarget& cluster) {
    Worker w;
    w.slurm = cluster;
    w.state = tr("ready: runs go through sbatch");
    workers_.push_back(w);
    list_->addTopLevelItem(new QTreeWidgetItem);
    const int row = count() - 1;
    refreshRow(row);
    save();
    emit workerChanged(row);
    return row;
}

void WorkersPanel::onAddSlurmClicked() {
    dispatch::SlurmTarget initial;
    const QString engine = this->engine();  // a cluster sharing this machine's files finds it at the same path
    if (!engine.isEmpty()) initial.engine = engine;
    SlurmClusterDialog d(this, initial);
    if (d.exec() != QDialog::Accepted) return;
    addSlurm(d.target());
}

int WorkersPanel::addAgent(const jobs::AgentAddress& address, bool remember) {
    Worker w;
    w.address = address;
    w.remember = remember;
    workers_.push_back(w);
    list_->addTopLevelItem(new QTreeWidgetItem);
    const int row = count() - 1;
    connectAgent(row);
    save();
    return row;
}

void WorkersPanel::removeWorker(int i) {
    if (i <= 0 || i >= count()) return;
    Worker& w = workers_[static_cast<size_t>(i)];
    if (w.client) {
        w.client->disconnect(this);
        w.client->disconnectFromAgent();
        w.client->deleteLater();
    }
    workers_.erase(workers_.begin() + i);
    delete list_->takeTopLevelItem(i);
    save();
}

int WorkersPanel::rowOfClient(const jobs::AgentClient* c) const {
    for (int i = 0; i < count(); ++i)
        if (workers_[static_cast<size_t>(i)].client == c) return i;
    return -1;
}

void WorkersPanel::connectAgent(int i, bool retry) {
    Worker& w = workers_[static_cast<size_t>(i)];
    if (w.client) {
        w.client->disconnect(this);
        w.client->deleteLater();
    }
    if (w.address.token.isEmpty()) {
        setState(i, tr("needs a token: remove and add it again with its token"));
        return;
    }
    auto* c = new jobs::AgentClient(w.address, this);
    w.client = c;
    connect(c, &jobs::AgentClient::ready, this, [this, c](const json&) {
        const int row = rowOfClient(c);
        if (row < 0) return;
        setState(row, tr("ready"));
        c->probe();
    });
    connect(c, &jobs::AgentClient::refused, this, [this, c](const QString& m) {
        if (const int row = rowOfClient(c); row >= 0) setState(row, tr("refused: %1").arg(m));
    });
    connect(c, &jobs::AgentClient::failed, this, [this, c](const QString& m) {
        const int row = rowOfClient(c);
        if (row >= 0 && !workers_[static_cast<size_t>(row)].state.startsWith(tr("refused")))
            setState(row, tr("unreachable: %1 (trying again every %2 s)").arg(m).arg(retry_->interval() / 1000.0));
    });
    connect(c, &jobs::AgentClient::agentLost, this, [this, c](const QString& m) {
        if (const int row = rowOfClient(c); row >= 0)
            setState(row, tr("lost: %1 (trying again every %2 s)").arg(m).arg(retry_->interval() / 1000.0));
    });
    connect(c, &jobs::AgentClient::devices, this, [this, c](const json& cluster) {
        const int row = rowOfClient(c);
        if (row < 0) return;
        workers_[static_cast<size_t>(row)].devices = cluster;
        refreshRow(row);
        emit workerChanged(row);
    });
    connect(c, &jobs::AgentClient::errorMessage, this, [this, c](const QString& m) {
        if (rowOfClient(c) >= 0) say(m);
    });
    // A retry keeps showing why the agent is away until it answers.
    if (!retry) setState(i, tr("connecting"));
    c->connectToAgent();
}

void WorkersPanel::probe(int i) {
    if (i < 0 || i >= count()) return;
    Worker& w = workers_[static_cast<size_t>(i)];
    if (w.local) {
        probeLocal();
        return;
    }
    if (w.slurm) return;  // its nodes are known once Slurm gives them to a job
    if (w.client && w.client->isReady()) {
        setState(i, tr("probing"));
        w.client->probe();
    } else {
        connectAgent(i);  // probes once ready
    }
}

void WorkersPanel::probeLocal() {
    const QString engine = this->engine();
    if (engine.isEmpty()) {
        setState(0, tr("hippie-engine is not built/installed: none next to hippie-studio or on PATH"));
        return;
    }
    if (local_probe_) return;
    setState(0, tr("probing"));
    local_probe_ = new QProcess(this);
    connect(local_probe_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        const QByteArray out = local_probe_->readAllStandardOutput();
        const QByteArray err = local_probe_->readAllStandardError();
        local_probe_->deleteLater();
        local_probe_ = nullptr;
        if (status != QProcess::NormalExit || code != 0) {
            setState(0, tr("probe failed: %1").arg(QString::fromUtf8((err.isEmpty() ? out : err).trimmed().right(300))));
            return;
        }
        try {
            const json cluster = json::parse(out.toStdString());
            (void)clusterFromJson(cluster, "hippie-engine probe");
            workers_[0].devices = cluster;
            setState(0, tr("ready"));
            emit workerChanged(0);
        } catch (const std::exception& e) {
            setState(0, tr("probe answer unreadable: %1").arg(QString::fromUtf8(e.what())));
        }
    });
    connect(local_probe_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart || !local_probe_) return;
        setState(0, tr("cannot start hippie-engine: %1").arg(local_probe_->errorString()));
        local_probe_->deleteLater();
        local_probe_ = nullptr;
    });
    local_probe_->start(engine, {QStringLiteral("probe"), QStringLiteral("--seconds"), QString::number(kProbeSeconds)});
}

void WorkersPanel::setState(int i, const QString& state) {
    workers_[static_cast<size_t>(i)].state = state;
    refreshRow(i);
    emit workerChanged(i);
}

void WorkersPanel::refreshRow(int i) {
    QTreeWidgetItem* it = list_->topLevelItem(i);
    const Worker& w = workers_[static_cast<size_t>(i)];
    it->setText(kColumnWorker, label(i));
    it->setText(kColumnState, w.state);
    it->setToolTip(kColumnState, w.state);
    it->setText(kColumnDevices, devicesText(w.devices));
    const bool bad = w.state.startsWith(tr("refused")) || w.state.startsWith(tr("lost")) || w.state.startsWith(tr("unreachable")) ||
                     w.state.startsWith(tr("hippie-engine is not"));
    it->setForeground(kColumnState, bad ? QBrush(QColor(0xb0, 0x20, 0x20)) : QBrush());
}

void WorkersPanel::onAddClicked() {
    AddAgentDialog d(this);
    if (d.exec() != QDialog::Accepted) return;
    const jobs::AgentAddress a = d.address();
    if (a.host.isEmpty()) {
        say(tr("An agent needs a host name or address."));
        return;
    }
    addAgent(a, d.remember());
}

std::optional<Cluster> WorkersPanel::clusterOf(const std::vector<int>& rows, QString* error) const {
    Cluster out;
    QStringList names;
    std::optional<Link> slowest;
    for (int r : rows) {
        const Worker& w = workers_[static_cast<size_t>(r)];
        if (!w.devices.is_object()) {
            if (error) *error = tr("%1 is not probed yet: press Probe").arg(label(r));
            return std::nullopt;
        }
        try {
            const Cluster c = clusterFromJson(w.devices, label(r).toStdString());
            out.nodes.insert(out.nodes.end(), c.nodes.begin(), c.nodes.end());
            for (const Link& l : {c.inter, c.nodes.front().intra}) {
                if (l.bandwidth_bytes_per_s <= 0) continue;
                if (!slowest || l.bandwidth_bytes_per_s < slowest->bandwidth_bytes_per_s) slowest = l;
            }
            names << (w.local ? tr("local") : w.address.host);
        } catch (const Error& e) {
            if (error) *error = tr("%1: %2").arg(label(r), QString::fromUtf8(e.what()));
            return std::nullopt;
        }
    }
    if (out.nodes.empty()) {
        if (error) *error = tr("No probed worker: press Probe first.");
        return std::nullopt;
    }
    out.inter = slowest.value_or(Link{});
    out.name = QStringLiteral("workers-%1").arg(names.join(QLatin1Char('+'))).toStdString();
    out.source = "hippie-engine probe of each worker; the link between workers is assumed as slow as the slowest "
                 "link any of them measured (fit it with Run history > Fit cost model)";
    return out;
}

void WorkersPanel::onUseClicked() {
    std::vector<int> rows;
    for (QTreeWidgetItem* it : list_->selectedItems()) rows.push_back(list_->indexOfTopLevelItem(it));
    if (rows.empty())
        for (int i = 0; i < count(); ++i)
            if (workers_[static_cast<size_t>(i)].devices.is_object()) rows.push_back(i);
    std::sort(rows.begin(), rows.end());
    QString error;
    const std::optional<Cluster> c = clusterOf(rows, &error);
    if (!c) {
        say(error);
        return;
    }
    say(tr("Cluster %1: %2 devices").arg(QString::fromStdString(c->name)).arg(c->deviceCount()));
    emit useAsCluster(*c, QString::fromStdString(c->name));
}

void WorkersPanel::load() {
    QSettings s;
    const int n = s.beginReadArray(QStringLiteral("workers/agents"));
    std::vector<std::pair<jobs::AgentAddress, bool>> saved;
    for (int i = 0; i < n; ++i) {
        s.setArrayIndex(i);
        jobs::AgentAddress a;
        a.host = s.value(QStringLiteral("host")).toString();
        a.port = static_cast<quint16>(s.value(QStringLiteral("port"), jobs::kDefaultAgentPort).toUInt());
        a.fingerprint_sha256 = s.value(QStringLiteral("fingerprint")).toString();
        a.token = s.value(QStringLiteral("token")).toString();
        if (!a.host.isEmpty()) saved.emplace_back(a, !a.token.isEmpty());
    }
    s.endArray();
    std::vector<dispatch::SlurmTarget> clusters;
    const int m = s.beginReadArray(QStringLiteral("workers/slurm"));
    for (int i = 0; i < m; ++i) {
        s.setArrayIndex(i);
        dispatch::SlurmTarget t;
        t.login_host = s.value(QStringLiteral("login")).toString();
        t.partition = s.value(QStringLiteral("partition")).toString();
        t.account = s.value(QStringLiteral("account")).toString();
        t.time_limit = s.value(QStringLiteral("time")).toString();
        t.extra_sbatch = s.value(QStringLiteral("extra")).toStringList();
        t.job_dir_root = s.value(QStringLiteral("dir")).toString();
        t.engine = s.value(QStringLiteral("engine"), t.engine).toString();
        clusters.push_back(t);
    }
    s.endArray();
    for (const dispatch::SlurmTarget& t : clusters) {
        Worker w;
        w.slurm = t;
        w.state = tr("ready: runs go through sbatch");
        workers_.push_back(w);
        list_->addTopLevelItem(new QTreeWidgetItem);
        refreshRow(count() - 1);
    }
    for (const auto& [a, remember] : saved) {
        Worker w;
        w.address = a;
        w.remember = remember;
        workers_.push_back(w);
        list_->addTopLevelItem(new QTreeWidgetItem);
        connectAgent(count() - 1);
    }
}

void WorkersPanel::save() const {
    if (!use_settings_) return;
    QSettings s;
    s.beginWriteArray(QStringLiteral("workers/agents"));
    int k = 0;
    for (const Worker& w : workers_) {
        if (w.local || w.slurm) continue;
        s.setArrayIndex(k++);
        s.setValue(QStringLiteral("host"), w.address.host);
        s.setValue(QStringLiteral("port"), w.address.port);
        s.setValue(QStringLiteral("fingerprint"), w.address.fingerprint_sha256);
        s.setValue(QStringLiteral("token"), w.remember ? w.address.token : QString());  // only when asked to
    }
    s.endArray();
    s.beginWriteArray(QStringLiteral("workers/slurm"));
    k = 0;
    for (const Worker& w : workers_) {
        if (!w.slurm) continue;
        s.setArrayIndex(k++);
        s.setValue(QStringLiteral("login"), w.slurm->login_host);
        s.setValue(QStringLiteral("partition"), w.slurm->partition);
        s.setValue(QStringLiteral("account"), w.slurm->account);
        s.setValue(QStringLiteral("time"), w.slurm->time_limit);
        s.setValue(QStringLiteral("extra"), w.slurm->extra_sbatch);
        s.setValue(QStringLiteral("dir"), w.slurm->job_dir_root);
        s.setValue(QStringLiteral("engine"), w.slurm->engine);
    }
    s.endArray();
}

}  // namespace hippie::studio
