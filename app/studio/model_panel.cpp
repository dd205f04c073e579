#include "app/studio/model_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QPushButton>
#include <QSpinBox>

#include "app/studio/message_label.h"
#include "app/studio/override_edit.h"
#include "app/studio/studio_session.h"
#include "app/studio/torchscript_import.h"
#include "planners/model/zoo.h"
#include "widgets/common/units.h"

namespace hippie::studio {

namespace {
constexpr int kMaxBatch = 1 << 16;
constexpr int kMaxSeqLen = 1 << 17;
}  // namespace

ModelPanel::ModelPanel(StudioSession* session, QWidget* parent)
    : QGroupBox(tr("Model"), parent),
      session_(session),
      zoo_(new QComboBox(this)),
      batch_(new QSpinBox(this)),
      seq_len_(new QSpinBox(this)),
      overrides_(new OverrideEdit(this)),
      precision_(new QComboBox(this)),
      message_(new MessageLabel(this)),
      torchscript_(new TorchScriptImport(this)) {
    zoo_->setObjectName(QStringLiteral("zoo-model"));  // for tests and style sheets
    for (const ZooEntry& z : zooModels()) {
        zoo_->addItem(QString::fromStdString(z.name));
        zoo_->setItemData(zoo_->count() - 1, QString::fromStdString(z.description), Qt::ToolTipRole);
    }
    batch_->setRange(1, kMaxBatch);
    batch_->setValue(8);
    batch_->setToolTip(tr("Samples the graph's costs are given for (planners rescale them per micro-batch)"));
    seq_len_->setRange(0, kMaxSeqLen);
    seq_len_->setSpecialValueText(tr("model default"));
    for (Precision p : {Precision::FP16, Precision::BF16, Precision::FP32}) precision_->addItem(QString::fromLatin1(toString(p)));

    auto* load = new QPushButton(tr("Load"), this);
    auto* open = new QPushButton(tr("Graph JSON…"), this);
    auto* script = new QPushButton(tr("TorchScript…"), this);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(load);
    buttons->addWidget(open);
    buttons->addWidget(script);

    auto* form = new QFormLayout(this);
    form->addRow(tr("Zoo model"), zoo_);
    form->addRow(tr("Batch size"), batch_);
    form->addRow(tr("Sequence length"), seq_len_);
    form->addRow(tr("Overrides"), overrides_);
    form->addRow(tr("Precision"), precision_);
    form->addRow(buttons);
    form->addRow(message_);

    overrides_->describeModel(zoo_->currentText().toStdString());
    connect(zoo_, &QComboBox::currentTextChanged, this,
            [this](const QString& name) { overrides_->describeModel(name.toStdString()); });
    connect(overrides_, &QLineEdit::returnPressed, this, &ModelPanel::onLoadClicked);
    connect(load, &QPushButton::clicked, this, &ModelPanel::onLoadClicked);
    // A zoo model applies as soon as it is picked, as a cluster preset does (one rule for both).
    connect(zoo_, &QComboBox::activated, this, &ModelPanel::onLoadClicked);
    connect(open, &QPushButton::clicked, this, &ModelPanel::onOpenClicked);
    connect(script, &QPushButton::clicked, this, &ModelPanel::onTorchScriptClicked);
    connect(torchscript_, &TorchScriptImport::imported, this, [this](const QString& graph_json) {
        emit torchScriptFinished(openGraphFile(graph_json));
    });
    connect(torchscript_, &TorchScriptImport::failed, this, [this](const QString& error) {
        showError(error);
        emit torchScriptFinished(false);
    });
    connect(session_, &StudioSession::graphChanged, this, &ModelPanel::showSummary);
}

ModelSpec ModelPanel::currentSpec() const {
    ModelSpec spec;
    spec.zoo = zoo_->currentText().toStdString();
    spec.batch_size = batch_->value();
    spec.seq_len = seq_len_->value();
    spec.precision = precisionFromString(precision_->currentText().toStdString());
    ModelSpec with_overrides = spec;
    if (overrides_->applyTo(with_overrides).isEmpty()) return with_overrides;
    return spec;
}

bool ModelPanel::loadZoo(const ModelSpec& spec) {
    const int index = zoo_->findText(QString::fromStdString(spec.zoo));
    if (index >= 0) zoo_->setCurrentIndex(index);
    batch_->setValue(spec.batch_size);
    seq_len_->setValue(spec.seq_len);
    overrides_->showOverrides(spec);
    precision_->setCurrentText(QString::fromLatin1(toString(spec.precision)));
    const QString error = session_->loadZooModel(spec);
    if (!error.isEmpty()) showError(error);
    return error.isEmpty();
}

bool ModelPanel::openGraphFile(const QString& path) {
    const QString error = session_->loadGraphFile(path);
    if (!error.isEmpty()) {
        // The reader's message names the file and the place in it (ops[3] (id 7, 'fc1'): field
        // 'name' is missing); say what to do about it.
        showError(error + tr("\nFix the file against the graph format (docs/formats.md, resources/schemas/graph.schema.json) "
                             "and open it again, or pick a zoo model. The previous model stays loaded."));
        return false;
    }
    // The combo no longer names the model: it says which file is loaded instead.
    zoo_->setPlaceholderText(tr("file: %1").arg(QFileInfo(path).fileName()));
    zoo_->setCurrentIndex(-1);
    return true;
}

void ModelPanel::importTorchScript(const QString& path, const QString& input_shape) { torchscript_->startWithShape(path, input_shape); }

void ModelPanel::showError(const QString& text) {
    message_->showError(text);
    emit errorShown(text);
}

void ModelPanel::onLoadClicked() {
    if (zoo_->currentIndex() < 0) {
        showError(tr("Pick a zoo model first (a graph file is loaded)."));
        return;
    }
    ModelSpec spec = currentSpec();
    spec.overrides.clear();
    spec.seq_len = seq_len_->value();
    const QString error = overrides_->applyTo(spec);
    if (!error.isEmpty()) {
        showError(error);
        return;
    }
    loadZoo(spec);
}

void ModelPanel::onOpenClicked() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open graph JSON"), {}, tr("Graph JSON (*.json);;All files (*)"));
    if (!path.isEmpty()) openGraphFile(path);
}

void ModelPanel::onTorchScriptClicked() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open TorchScript module"), {}, tr("TorchScript (*.pt *.pth);;All files (*)"));
    if (!path.isEmpty()) torchscript_->start(path, this);
}

void ModelPanel::showSummary() {
    const Graph& g = session_->graph();
    message_->showInfo(tr("%1: %2 ops, %3 layers, %4 M parameters, %5 forward per batch of %6")
                           .arg(QString::fromStdString(g.name))
                           .arg(g.ops.size())
                           .arg(g.layerCount())
                           .arg(static_cast<double>(g.paramCount()) / 1e6, 0, 'f', 1)
                           .arg(widgets::formatFlops(g.totalFwdFlops()))
                           .arg(g.batch_size));
}

}  // namespace hippie::studio
