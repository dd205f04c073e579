#include "widgets/graph/graph_view.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QGraphicsItem>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QShortcut>
#include <QSvgGenerator>
#include <QTimer>
#include <QVBoxLayout>

#include "planners/model/graph_json.h"
#include "widgets/common/palette.h"
#include "widgets/graph/graph_scene.h"
#include "widgets/graph/graphviz_layouter.h"
#include "widgets/graph/zoomable_view.h"

namespace hippie::widgets {

namespace {
constexpr double kMaxExportPixels = 8000;  // longest side of an exported PNG
constexpr double kMinReadableScale = 0.45;  // below this, op labels are unreadable
constexpr double kNaturalScale = 1.0;       // labels at the size the boxes were measured for
constexpr int kPropertiesWidth = 240;

ColorBy currentColorBy(const QComboBox* combo) { return combo->currentIndex() == 1 ? ColorBy::Device : ColorBy::Stage; }
}  // namespace

GraphView::GraphView(QWidget* parent)
    : QWidget(parent),
      scene_(new GraphScene(this)),
      view_(new ZoomableGraphicsView(this)),
      layouter_(new GraphvizLayouter(this)),
      layer_view_(new QCheckBox(tr("Layer view"), this)),
      color_by_(new QComboBox(this)),
      search_(new QLineEdit(this)),
      status_(new QLabel(this)),
      legend_(new QLabel(this)),
      properties_(new QLabel(this)) {
    view_->setScene(scene_);
    auto* fit_button = new QPushButton(tr("Fit"), this);
    color_by_->addItem(tr("Colour by stage"));
    color_by_->addItem(tr("Colour by device"));
    search_->setPlaceholderText(tr("Search ops by name…"));
    search_->setClearButtonEnabled(true);

    auto* previous = new QPushButton(tr("▲"), this);
    auto* next = new QPushButton(tr("▼"), this);
    previous->setToolTip(tr("Previous match (Shift+F3)"));
    next->setToolTip(tr("Next match (F3)"));
    previous->setMaximumWidth(32);
    next->setMaximumWidth(32);
    auto* bar = new QHBoxLayout;
    bar->addWidget(fit_button);
    bar->addWidget(layer_view_);
    bar->addWidget(color_by_);
    bar->addWidget(search_, 1);
    bar->addWidget(previous);
    bar->addWidget(next);
    bar->addWidget(status_);
    legend_->setTextFormat(Qt::RichText);
    legend_->setWordWrap(true);
    properties_->setTextFormat(Qt::PlainText);
    properties_->setWordWrap(true);
    properties_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    properties_->setFixedWidth(kPropertiesWidth);
    properties_->setStyleSheet(QStringLiteral("background: palette(base); border: 1px solid palette(mid); padding: 6px;"));
    properties_->setText(tr("Click an op for its properties; double-click a layer box to expand it."));
    auto* body = new QHBoxLayout;
    body->addWidget(view_, 1);
    body->addWidget(properties_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(legend_);
    layout->addLayout(body, 1);

    connect(fit_button, &QPushButton::clicked, this, &GraphView::fit);
    connect(previous, &QPushButton::clicked, this, &GraphView::previousMatch);
    connect(next, &QPushButton::clicked, this, &GraphView::nextMatch);
    auto* f3 = new QShortcut(QKeySequence(Qt::Key_F3), this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(f3, &QShortcut::activated, this, &GraphView::nextMatch);
    auto* shift_f3 = new QShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3), this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(shift_f3, &QShortcut::activated, this, &GraphView::previousMatch);
    auto* find = new QShortcut(QKeySequence::Find, this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(find, &QShortcut::activated, this, [this] {
        search_->setFocus();
        search_->selectAll();
    });
    connect(layer_view_, &QCheckBox::toggled, this, &GraphView::setCollapsed);
    connect(color_by_, &QComboBox::currentIndexChanged, this, &GraphView::recolor);
    connect(search_, &QLineEdit::returnPressed, this, &GraphView::onSearch);
    connect(search_, &QLineEdit::textChanged, this, [this](const QString& t) {
        if (t.isEmpty()) scene_->highlight({});
    });
    connect(layouter_, &GraphvizLayouter::layoutReady, this, &GraphView::onLayoutReady);
    connect(view_, &ZoomableGraphicsView::clicked, this, &GraphView::onClicked);
    connect(view_, &ZoomableGraphicsView::navigated, this, [this] { keep_fitted_ = false; });
}

GraphView::~GraphView() = default;

void GraphView::setGraph(const Graph& graph) {
    graph_ = graph;
    expanded_.clear();
    search_state_ = {};
    properties_->setText(tr("Click an op for its properties; double-click a layer box to expand it."));
    collapsed_ = shouldCollapse(graph_, collapse_threshold_);
    const QSignalBlocker block(layer_view_);
    layer_view_->setChecked(collapsed_);
    relayout();
}

void GraphView::setPlan(const Plan* plan) {
    plan_ = plan ? std::optional<Plan>(*plan) : std::nullopt;
    recolor();
}

void GraphView::setCollapsed(bool collapsed) {
    if (collapsed == collapsed_ && pending_ == 0 && !input_.nodes.empty()) return;
    collapsed_ = collapsed;
    expanded_.clear();
    const QSignalBlocker block(layer_view_);
    layer_view_->setChecked(collapsed_);
    relayout();
}

void GraphView::expandLayer(int layer) {
    if (!collapsed_ || !expanded_.insert(layer).second) return;
    relayout();
}

void GraphView::relayout() {
    input_ = buildLayoutInput(graph_, collapsed_, expanded_);
    status_->setText(tr("laying out %1 boxes…").arg(input_.nodes.size()));
    pending_ = layouter_->requestLayout(input_);
}

void GraphView::onLayoutReady(quint64 id, const GraphLayout& layout) {
    if (id != pending_) return;  // a newer request is on its way
    pending_ = 0;
    if (!layout.error.empty()) {
        status_->setText(QString::fromStdString(layout.error));
        emit layoutFinished(0);
        return;
    }
    scene_->setLayout(input_, layout, colors(), tooltips());
    scene_->setSplitTags(splitTags());
    status_->setText(tr("%1 ops, %2 boxes").arg(graph_.ops.size()).arg(input_.nodes.size()));
    updateLegend();
    if (focus_match_after_layout_) {
        focus_match_after_layout_ = false;
        showCurrentMatch();
    } else {
        keep_fitted_ = true;  // a new graph or layer view: shown whole
        autoFit();
    }
    emit layoutFinished(scene_->nodeItemCount());
}


std::vector<QColor> GraphView::colors() const {
    const std::vector<int> cat = nodeCategories(graph_, input_, plan_ ? &*plan_ : nullptr, currentColorBy(color_by_));
    std::vector<QColor> out;
    out.reserve(cat.size());
    for (int c : cat) out.push_back(categoryColor(c));
    return out;
}

std::vector<QString> GraphView::tooltips() const {
    const ColorBy by = currentColorBy(color_by_);
    const std::vector<int> cat = nodeCategories(graph_, input_, plan_ ? &*plan_ : nullptr, by);
    std::vector<QString> out;
    out.reserve(cat.size());
    const std::vector<std::string> tags = nodeSplitTags(graph_, input_, plan_ ? &*plan_ : nullptr);
    for (size_t i = 0; i < input_.nodes.size(); ++i) {
        std::string text = nodeTooltip(graph_, input_.nodes[i], cat[i], by);
        if (const std::string split = splitTooltip(tags[i], plan_ ? &*plan_ : nullptr); !split.empty()) text += "\n" + split;
        out.push_back(QString::fromStdString(text));
    }
    return out;
}

QString GraphView::splitTooltipOf(int node) const {
    const std::vector<std::string> tags = nodeSplitTags(graph_, input_, plan_ ? &*plan_ : nullptr);
    if (node < 0 || static_cast<size_t>(node) >= tags.size()) return {};
    return QString::fromStdString(splitTooltip(tags[static_cast<size_t>(node)], plan_ ? &*plan_ : nullptr));
}

std::vector<QString> GraphView::splitTags() const {
    std::vector<QString> out;
    for (const std::string& t : nodeSplitTags(graph_, input_, plan_ ? &*plan_ : nullptr)) out.push_back(QString::fromStdString(t));
    return out;
}

void GraphView::recolor() {
    if (scene_->nodeItemCount() == static_cast<int>(input_.nodes.size())) {
        scene_->setColors(colors(), tooltips());
        scene_->setSplitTags(splitTags());
    }
    updateLegend();
}

void GraphView::updateLegend() {
    if (!plan_ || input_.nodes.empty()) {
        legend_->setText(tr("<i>Select a plan in the comparison to colour the ops by stage or device.</i>"));
        return;
    }
    const ColorBy by = currentColorBy(color_by_);
    const std::vector<int> cat = nodeCategories(graph_, input_, &*plan_, by);
    std::set<int> used(cat.begin(), cat.end());
    QString html;
    for (int c : used) {
        // Non-breaking: a wrapped legend broke "stage 11" after "stage".
        const QString name = c < 0 ? tr("unplaced") : (by == ColorBy::Device ? tr("GPU&nbsp;%1") : tr("stage&nbsp;%1")).arg(c);
        html += QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2&nbsp;&nbsp; ")
                    .arg(categoryColor(c).name(), name);
    }
    if (plan_->tp > 1 && !plan_->isPlacement()) {
        const std::vector<QString> tags = splitTags();
        if (std::any_of(tags.begin(), tags.end(), [](const QString& t) { return !t.isEmpty(); })) {
            // With per-stage degrees each badge names its stage's: n stands for it.
            const QString t = plan_->perStageTp() ? QStringLiteral("<i>n</i>") : QString::number(plan_->tp);
            const QString over = plan_->perStageTp() ? tr("its&nbsp;stage's&nbsp;<i>n</i>&nbsp;tensor-parallel&nbsp;ranks (per&nbsp;stage %1)")
                                                         .arg(QString::fromStdString(plan_->tpText()))
                                                   : tr("the&nbsp;%1&nbsp;tensor-parallel&nbsp;ranks").arg(plan_->tp);
            html += tr("<span style='border:2px double #202020'>&nbsp;&#9553;&nbsp;</span>&nbsp;double&nbsp;border: split&nbsp;over "
                       "%1, <b>col/t%2</b>&nbsp;column-parallel (output split), "
                       "<b>row/t%2</b>&nbsp;row-parallel (input split, outputs all-reduced)")
                        .arg(over, t);
        }
    }
    legend_->setText(html);
}

QString GraphView::legendText() const { return legend_->text(); }

QString GraphView::statusText() const { return status_->text(); }

void GraphView::fit() {
    keep_fitted_ = true;
    autoFit();
}

void GraphView::autoFit() {
    if (!keep_fitted_) return;
    const QRectF rect = scene_->sceneRect();
    if (rect.isEmpty()) return;
    view_->fitInView(rect, Qt::KeepAspectRatio);
    // A small graph is not blown up past the size its boxes were measured for.
    if (view_->transform().m11() > kNaturalScale) {
        view_->setTransform(QTransform::fromScale(kNaturalScale, kNaturalScale));
        view_->centerOn(rect.center());
    }
    // A long graph fitted whole shows its shape and colours, not its names: say how to read them.
    QString status = tr("%1 ops, %2 boxes").arg(graph_.ops.size()).arg(input_.nodes.size());
    if (const double scale = view_->transform().m11(); scale < kMinReadableScale)
        status += collapsed_ ? tr(" · shown whole at %1%: scroll to zoom in").arg(qRound(scale * 100))
                             : tr(" · shown whole at %1%: scroll to zoom in, or tick Layer view").arg(qRound(scale * 100));
    status_->setText(status);
}

void GraphView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // A layout that finished while the page was hidden was fitted to the wrong size; the
    // viewport has its final size only once the page's layout has run.
    autoFit();
    QTimer::singleShot(0, this, &GraphView::autoFit);
}

void GraphView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    autoFit();
}

void GraphView::onSearch() { search(search_->text()); }

void GraphView::search(const QString& text) {
    if (search_->text() != text) search_->setText(text);
    search_state_.search(graph_, text.toStdString());
    showCurrentMatch();
}

void GraphView::nextMatch() {
    search_state_.next();
    showCurrentMatch();
}

void GraphView::previousMatch() {
    search_state_.previous();
    showCurrentMatch();
}

QString GraphView::searchStatus() const {
    if (search_->text().isEmpty()) return {};
    if (search_state_.count() == 0) return tr("no match");
    return tr("%1 of %2").arg(search_state_.current() + 1).arg(search_state_.count());
}

void GraphView::showCurrentMatch() {
    // The match may sit in a collapsed layer: expand it first, then come back here.
    const int layer = search_state_.layerToExpand(graph_, collapsed_, expanded_);
    if (layer >= 0) {
        expanded_.insert(layer);
        focus_match_after_layout_ = true;
        relayout();
        return;
    }
    scene_->highlight(search_->text());
    status_->setText(searchStatus());
    const int op = search_state_.currentOp();
    for (size_t i = 0; i < input_.nodes.size() && op >= 0; ++i)
        if (input_.nodes[i].op == op) {
            // A match is shown readable, even when the whole graph was fitted small.
            if (view_->transform().m11() < kMinReadableScale) view_->setTransform(QTransform::fromScale(kNaturalScale, kNaturalScale));
            view_->centerOn(scene_->nodeRect(static_cast<int>(i)).center());
            keep_fitted_ = false;
            // The same panel as a click: with the op's stage or device under the current plan.
            const ColorBy by = currentColorBy(color_by_);
            const std::vector<int> cat = nodeCategories(graph_, input_, plan_ ? &*plan_ : nullptr, by);
            QString details = QString::fromStdString(nodeProperties(graph_, input_.nodes[i], cat[i], by));
            if (const QString split = splitTooltipOf(static_cast<int>(i)); !split.isEmpty()) details += QLatin1Char('\n') + split;
            properties_->setText(details);
        }
}

QString GraphView::propertiesText() const { return properties_->text(); }

QRectF GraphView::visibleSceneRect() const { return view_->mapToScene(view_->viewport()->rect()).boundingRect(); }

void GraphView::onClicked(QPointF scene_pos, bool double_click) {
    const int node = scene_->nodeOfItem(scene_->itemAt(scene_pos, view_->transform()));
    if (node < 0 || static_cast<size_t>(node) >= input_.nodes.size()) return;
    const LayoutNode& n = input_.nodes[static_cast<size_t>(node)];
    if (double_click && n.op < 0) {
        expandLayer(n.layer);
        return;
    }
    const ColorBy by = currentColorBy(color_by_);
    const std::vector<int> cat = nodeCategories(graph_, input_, plan_ ? &*plan_ : nullptr, by);
    QString details = QString::fromStdString(nodeProperties(graph_, n, cat[static_cast<size_t>(node)], by));
    if (const QString split = splitTooltipOf(node); !split.isEmpty()) details += QLatin1Char('\n') + split;
    properties_->setText(details);
    emit nodeActivated(details);
}

bool GraphView::exportPng(const QString& path) const {
    const QRectF rect = scene_->sceneRect();
    const double scale = std::min(2.0, kMaxExportPixels / std::max(rect.width(), rect.height()));
    QImage image((rect.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    scene_->render(&painter, QRectF(), rect);
    painter.end();
    return image.save(path);
}

bool GraphView::exportSvg(const QString& path) const {
    const QRectF rect = scene_->sceneRect();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(rect.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), rect.size()));
    svg.setTitle(QString::fromStdString(graph_.name));
    QPainter painter;
    if (!painter.begin(&svg)) return false;
    scene_->render(&painter, QRectF(QPointF(0, 0), rect.size()), rect);
    return painter.end();
}

bool GraphView::exportDot(const QString& path) const {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) return false;
    const std::string dot = graphToDot(graph_);
    return file.write(dot.data(), static_cast<qint64>(dot.size())) == static_cast<qint64>(dot.size());
}

}  // namespace hippie::widgets
