#pragma once
// Graphviz (dot) layout of a LayoutInput, off the GUI thread. Graphviz is not thread-safe,
// so every layout of the process runs on one dedicated thread, under the C numeric locale;
// Graphviz's headers stay inside graphviz_layouter.cpp.
#include <atomic>
#include <cstdint>

#include <QMetaType>
#include <QObject>

#include "widgets/graph/layout_graph.h"

namespace hippie::widgets {

// Auto: dot for up to kLayeredLayoutNodes boxes, Layered above. Dot: dot all the way (spline
// edges). Layered: dot ranks and orders, assignLayeredCoordinates() places, edges are
// polylines through dot's bend points.
enum class LayoutMethod { Auto, Dot, Layered };
inline constexpr int kLayeredLayoutNodes = 1000;

class GraphvizLayouter : public QObject {
    Q_OBJECT
public:
    explicit GraphvizLayouter(QObject* parent = nullptr);

    // Queues a layout on the Graphviz thread; layoutReady(id, ...) follows on this object's
    // thread. A later request does not cancel an earlier one, callers keep the latest id.
    quint64 requestLayout(const LayoutInput& input);

    // The same layout, waiting for it (tests, benchmarks, the CLI-like screenshot path).
    // Still runs on the Graphviz thread; must not be called from that thread.
    static GraphLayout layoutBlocking(const LayoutInput& input, LayoutMethod method = LayoutMethod::Auto);

signals:
    void layoutReady(quint64 id, const hippie::widgets::GraphLayout& layout);
};

}  // namespace hippie::widgets

Q_DECLARE_METATYPE(hippie::widgets::GraphLayout)
