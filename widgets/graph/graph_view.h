#pragma once
// The operator graph view: Graphviz layout on its own thread, drawn in a QGraphicsScene,
// coloured by the selected plan's stage or device; zoom, pan, fit, search, hover tooltips,
// click for details; one box per layer above a few hundred ops, expanded on double-click.
#include <memory>
#include <optional>
#include <set>

#include <QWidget>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "widgets/graph/layout_graph.h"
#include "widgets/graph/node_colors.h"
#include "widgets/graph/op_search.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace hippie::widgets {

class GraphScene;
class GraphvizLayouter;
class ZoomableGraphicsView;

class GraphView : public QWidget {
    Q_OBJECT
public:
    explicit GraphView(QWidget* parent = nullptr);
    ~GraphView() override;

    void setGraph(const Graph& graph);  // starts a layout; layoutFinished() follows
    void setPlan(const Plan* plan);     // recolours (null: no plan)
    void setCollapseThreshold(int ops) { collapse_threshold_ = ops; }
    void setCollapsed(bool collapsed);
    void expandLayer(int layer);

    bool isCollapsed() const { return collapsed_; }
    bool isLayingOut() const { return pending_ != 0; }
    const LayoutInput& layoutInput() const { return input_; }
    const GraphScene* scene() const { return scene_; }

    bool exportPng(const QString& path) const;
    bool exportSvg(const QString& path) const;
    bool exportDot(const QString& path) const;

    // Search (Enter / F3 / Shift+F3): matches also inside collapsed layers, whose layer is
    // expanded to show the current one. "2 of 14" in searchStatus().
    void search(const QString& text);
    void nextMatch();
    void previousMatch();
    const OpSearch& opSearch() const { return search_state_; }
    QString searchStatus() const;
    const std::set<int>& expandedLayers() const { return expanded_; }
    QString propertiesText() const;  // the clicked node's properties panel
    QString legendText() const;      // stage/device -> colour, as shown
    QString statusText() const;      // "294 ops, 294 boxes", the search's "2 of 14", ...
    QRectF visibleSceneRect() const;  // the part of the graph in view, in scene coordinates
    // Until the user zooms or pans, the whole graph is kept fitted in the view (after each
    // layout, when the page is first shown and when it is resized).
    bool keepsFitted() const { return keep_fitted_; }

public slots:
    void fit();     // whole graph in view (the Fit button)

protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

signals:
    void layoutFinished(int nodes);
    void nodeActivated(const QString& details);

private:
    void relayout();
    void onLayoutReady(quint64 id, const GraphLayout& layout);
    void recolor();
    void onSearch();
    void showCurrentMatch();
    void autoFit();  // fit() unless the user has moved the view since the graph was laid out
    void updateLegend();
    void onClicked(QPointF scene_pos, bool double_click);
    std::vector<QColor> colors() const;
    std::vector<QString> tooltips() const;
    std::vector<QString> splitTags() const;
    QString splitTooltipOf(int node) const;  // "tensor parallel: …" or ""

    GraphScene* scene_;
    ZoomableGraphicsView* view_;
    GraphvizLayouter* layouter_;
    QCheckBox* layer_view_;
    QComboBox* color_by_;
    QLineEdit* search_;
    QLabel* status_;
    QLabel* legend_;
    QLabel* properties_;
    OpSearch search_state_;
    bool focus_match_after_layout_ = false;

    Graph graph_;
    std::optional<Plan> plan_;
    LayoutInput input_;
    std::set<int> expanded_;
    bool collapsed_ = false;
    int collapse_threshold_ = kDefaultCollapseThresholdOps;
    quint64 pending_ = 0;
    bool keep_fitted_ = true;
};

}  // namespace hippie::widgets
