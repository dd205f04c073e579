#include "app/studio/cluster_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

#include "app/studio/message_label.h"
#include "app/studio/studio_session.h"
#include "planners/cluster/cluster_json.h"
#include "widgets/common/units.h"

namespace hippie::studio {

namespace {
constexpr double kBytesPerGB = 1e9;  // bandwidths are shown in GB/s, as vendors quote them
constexpr int kMaxNodes = 1024;
constexpr int kMaxDevicesPerNode = 64;
}  // namespace

ClusterPanel::ClusterPanel(StudioSession* session, QWidget* parent)
    : QGroupBox(tr("Cluster"), parent),
      session_(session),
      preset_(new QComboBox(this)),
      nodes_(new QSpinBox(this)),
      devices_(new QSpinBox(this)),
      device_type_(new QLineEdit(this)),
      memory_gib_(new QDoubleSpinBox(this)),
      intra_gbps_(new QDoubleSpinBox(this)),
      inter_gbps_(new QDoubleSpinBox(this)),
      message_(new MessageLabel(this)) {
    for (const ClusterPreset& p : clusterPresets()) {
        preset_->addItem(QString::fromStdString(p.name));
        preset_->setItemData(preset_->count() - 1, QString::fromStdString(p.description), Qt::ToolTipRole);
    }
    nodes_->setRange(1, kMaxNodes);
    devices_->setRange(1, kMaxDevicesPerNode);
    memory_gib_->setRange(0.25, 4096);
    memory_gib_->setSuffix(tr(" GiB"));
    for (QDoubleSpinBox* bw : {intra_gbps_, inter_gbps_}) {
        bw->setRange(0.01, 10000);
        bw->setDecimals(1);
        bw->setSuffix(tr(" GB/s"));
    }
    auto* apply = new QPushButton(tr("Apply edits"), this);
    auto* open = new QPushButton(tr("Open…"), this);
    auto* save = new QPushButton(tr("Save…"), this);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(apply);
    buttons->addWidget(open);
    buttons->addWidget(save);

    auto* form = new QFormLayout(this);
    form->addRow(tr("Preset"), preset_);
    form->addRow(tr("Nodes"), nodes_);
    form->addRow(tr("Devices per node"), devices_);
    form->addRow(tr("Device type"), device_type_);
    form->addRow(tr("Device memory"), memory_gib_);
    form->addRow(tr("Intra-node bandwidth"), intra_gbps_);
    form->addRow(tr("Inter-node bandwidth"), inter_gbps_);
    form->addRow(buttons);
    form->addRow(message_);

    connect(preset_, &QComboBox::textActivated, this, &ClusterPanel::loadPreset);
    connect(apply, &QPushButton::clicked, this, &ClusterPanel::applyEdits);
    connect(open, &QPushButton::clicked, this, &ClusterPanel::onOpenClicked);
    connect(save, &QPushButton::clicked, this, &ClusterPanel::onSaveClicked);
    connect(session_, &StudioSession::clusterChanged, this, &ClusterPanel::showCluster);
}

bool ClusterPanel::loadPreset(const QString& name) {
    const QString error = session_->loadClusterPreset(name);
    if (!error.isEmpty()) message_->showError(error);
    return error.isEmpty();
}

bool ClusterPanel::openFile(const QString& path) {
    const QString error = session_->loadClusterFile(path);
    if (!error.isEmpty()) message_->showError(error + tr("\nThe previous cluster stays loaded."));
    return error.isEmpty();
}

void ClusterPanel::showCluster() {
    const Cluster& c = session_->cluster();
    if (c.nodes.empty()) return;
    const Node& n = c.nodes.front();
    const QSignalBlocker block(preset_);
    const int index = preset_->findText(session_->clusterName());
    if (index >= 0) preset_->setCurrentIndex(index);
    nodes_->setValue(static_cast<int>(c.nodes.size()));
    devices_->setValue(n.devices);
    device_type_->setText(QString::fromStdString(n.device.type));
    memory_gib_->setValue(widgets::toGiB(n.device.memory_bytes));
    // The runtime's reserve is the cluster's (a preset's or the JSON's reserved_bytes), kept
    // through edits: said here rather than edited, as the panel edits only the usual figures.
    memory_gib_->setToolTip(tr("Of each device's memory, %1 GiB is reserved by the runtime (what the driver keeps, the CUDA "
                               "context): plans fit their tensors in the rest. Set reserved_bytes in the cluster JSON to "
                               "change it; hippie-engine probe measures it on a GPU.")
                                .arg(widgets::toGiB(n.device.reserved_bytes), 0, 'f', 2));
    intra_gbps_->setValue(n.intra.bandwidth_bytes_per_s / kBytesPerGB);
    inter_gbps_->setValue(c.inter.bandwidth_bytes_per_s / kBytesPerGB);
    message_->showInfo(tr("%1: %2 nodes × %3 %4, %5 devices in all")
                           .arg(QString::fromStdString(c.name))
                           .arg(c.nodes.size())
                           .arg(n.devices)
                           .arg(QString::fromStdString(n.device.type))
                           .arg(c.deviceCount()));
}

void ClusterPanel::applyEdits() {
    Cluster c = session_->cluster();
    if (c.nodes.empty()) return;
    Node node = c.nodes.front();
    node.devices = devices_->value();
    node.device.type = device_type_->text().toStdString();
    node.device.memory_bytes = static_cast<int64_t>(memory_gib_->value() * widgets::kBytesPerGiB);
    if (node.device.reserved_bytes >= node.device.memory_bytes) {
        message_->showError(tr("A device needs more than the %1 GiB its runtime reserves: nothing would be left for tensors.")
                                .arg(widgets::toGiB(node.device.reserved_bytes), 0, 'f', 2));
        return;
    }
    node.intra.bandwidth_bytes_per_s = intra_gbps_->value() * kBytesPerGB;
    c.nodes.assign(static_cast<size_t>(nodes_->value()), node);
    c.inter.bandwidth_bytes_per_s = inter_gbps_->value() * kBytesPerGB;
    c.name = session_->cluster().name + " (edited)";
    c.source = "edited in hippie-studio from " + session_->cluster().name;
    session_->setCluster(c, QString::fromStdString(c.name));
}

void ClusterPanel::onOpenClicked() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open cluster JSON"), {}, tr("Cluster JSON (*.json);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
}

void ClusterPanel::onSaveClicked() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save cluster JSON"), {}, tr("Cluster JSON (*.json)"));
    if (path.isEmpty()) return;
    const QString error = session_->saveClusterFile(path);
    if (error.isEmpty())
        message_->showInfo(tr("Saved %1").arg(path));
    else
        message_->showError(error);
}

}  // namespace hippie::studio
