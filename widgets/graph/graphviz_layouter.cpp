#include "widgets/graph/graphviz_layouter.h"

#include <clocale>
#include <cmath>
#include <locale.h>
#include <unordered_map>

#include <QCoreApplication>
#include <QPointer>
#include <QThread>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "widgets/graph/layered_coordinates.h"

namespace hippie::widgets {

namespace {

constexpr double kPointsPerInch = 72.0;
constexpr double kNodeSepInches = 0.25;
constexpr double kRankSepInches = 0.35;
constexpr double kArrowLengthPt = 10;  // dot's default arrowhead length
constexpr double kBendWidthPt = 2;     // room an edge takes where it crosses a rank
// Above kLayeredLayoutNodes boxes dot only ranks and orders them (its "phase 2") and
// assignLayeredCoordinates() places them: dot's own x positioning (network simplex, whose
// feasible tree is quadratic in Graphviz 2.42) took 2 s at 1,000 boxes and a minute at 5,000.

char* cstr(const char* s) { return const_cast<char*>(s); }  // cgraph's API predates const

// Where the segment from `inside` (a box's centre) towards `outside` leaves the box.
std::pair<double, double> clipToBox(const NodeGeometry& box, std::pair<double, double> outside) {
    const double dx = outside.first - box.x, dy = outside.second - box.y;
    if (dx == 0 && dy == 0) return {box.x, box.y};
    const double sx = dx != 0 ? (box.width / 2) / std::abs(dx) : 1e300;
    const double sy = dy != 0 ? (box.height / 2) / std::abs(dy) : 1e300;
    const double t = std::min({sx, sy, 1.0});
    return {box.x + dx * t, box.y + dy * t};
}

// A polyline as straight cubic segments (p0 (c1 c2 p)*), the form dot's splines come in.
void appendStraightSegment(std::vector<std::pair<double, double>>& bezier, std::pair<double, double> to) {
    const auto from = bezier.back();
    bezier.emplace_back(from.first + (to.first - from.first) / 3, from.second + (to.second - from.second) / 3);
    bezier.emplace_back(from.first + 2 * (to.first - from.first) / 3, from.second + 2 * (to.second - from.second) / 3);
    bezier.push_back(to);
}

Agraph_t* buildGraph(const LayoutInput& input, bool layered, std::vector<Agnode_t*>& nodes, std::vector<Agedge_t*>& edges) {
    Agraph_t* g = agopen(cstr("g"), Agdirected, nullptr);
    agattr(g, AGRAPH, cstr("rankdir"), cstr("TB"));
    agattr(g, AGRAPH, cstr("nodesep"), cstr(std::to_string(kNodeSepInches).c_str()));
    agattr(g, AGRAPH, cstr("ranksep"), cstr(std::to_string(kRankSepInches).c_str()));
    if (layered) {
        agattr(g, AGRAPH, cstr("phase"), cstr("2"));         // rank and order only
        agattr(g, AGRAPH, cstr("newrank"), cstr("true"));    // its ranking is ten times faster here
        agattr(g, AGRAPH, cstr("mclimit"), cstr("0.2"));     // fewer crossing-minimisation passes
        agattr(g, AGRAPH, cstr("remincross"), cstr("false"));
        agattr(g, AGRAPH, cstr("nslimit1"), cstr("1"));
    }
    agattr(g, AGNODE, cstr("shape"), cstr("box"));
    agattr(g, AGNODE, cstr("fixedsize"), cstr("true"));
    agattr(g, AGNODE, cstr("label"), cstr(""));
    Agsym_t* width = agattr(g, AGNODE, cstr("width"), cstr("1"));
    Agsym_t* height = agattr(g, AGNODE, cstr("height"), cstr("0.5"));

    nodes.reserve(input.nodes.size());
    for (size_t i = 0; i < input.nodes.size(); ++i) {
        const std::string name = "n" + std::to_string(i);
        Agnode_t* n = agnode(g, cstr(name.c_str()), 1);
        agxset(n, width, cstr(std::to_string(input.nodes[i].width_pt / kPointsPerInch).c_str()));
        agxset(n, height, cstr(std::to_string(input.nodes[i].height_pt / kPointsPerInch).c_str()));
        nodes.push_back(n);
    }
    edges.reserve(input.edges.size());
    for (const LayoutEdge& e : input.edges)
        edges.push_back(agedge(g, nodes[static_cast<size_t>(e.src)], nodes[static_cast<size_t>(e.dst)], nullptr, 1));
    return g;
}

// Large graphs: dot's ranks and order (with the bend points of edges that span ranks), our x.
GraphLayout runLayered(GVC_t* gvc, const LayoutInput& input) {
    GraphLayout out;
    std::vector<Agnode_t*> nodes;
    std::vector<Agedge_t*> edges;
    Agraph_t* g = buildGraph(input, true, nodes, edges);
    if (gvLayout(gvc, g, "dot") != 0) {
        agclose(g);
        out.error = "Graphviz could not rank the graph";
        return out;
    }
    // Box ids: the ops' boxes first, in input order, then every bend point dot made.
    std::unordered_map<Agnode_t*, int> id;
    LayeredInput li;
    li.node_sep = kNodeSepInches * kPointsPerInch;
    li.rank_sep = kRankSepInches * kPointsPerInch;
    for (size_t i = 0; i < nodes.size(); ++i) {
        id[nodes[i]] = static_cast<int>(i);
        li.width.push_back(input.nodes[i].width_pt);
        li.height.push_back(input.nodes[i].height_pt);
        li.is_bend.push_back(false);
    }
    for (int r = GD_minrank(g); r <= GD_maxrank(g); ++r) {
        const rank_t& rank = GD_rank(g)[r];
        std::vector<int> order;
        for (int k = 0; k < rank.n; ++k) {
            Agnode_t* v = rank.v[k];
            auto [it, added] = id.emplace(v, static_cast<int>(li.width.size()));
            if (added) {
                li.width.push_back(kBendWidthPt);
                li.height.push_back(0);
                li.is_bend.push_back(true);
            }
            order.push_back(it->second);
        }
        li.ranks.push_back(std::move(order));
    }
    // Each edge's chain: tail, its bend points rank by rank, head.
    std::vector<std::vector<int>> chains(edges.size());
    const int max_steps = GD_maxrank(g) - GD_minrank(g) + 1;
    for (size_t i = 0; i < edges.size(); ++i) {
        const int tail = input.edges[i].src, head = input.edges[i].dst;
        std::vector<int> chain{tail};
        Agedge_t* ve = ED_to_virt(edges[i]);
        for (int step = 0; ve && step < max_steps; ++step) {
            const auto it = id.find(aghead(ve));
            if (it == id.end() || !li.is_bend[static_cast<size_t>(it->second)]) break;
            chain.push_back(it->second);
            ve = ND_out(aghead(ve)).size > 0 ? ND_out(aghead(ve)).list[0] : nullptr;
        }
        chain.push_back(head);
        for (size_t k = 0; k + 1 < chain.size(); ++k) li.links.emplace_back(chain[k], chain[k + 1]);
        chains[i] = std::move(chain);
    }
    gvFreeLayout(gvc, g);
    agclose(g);

    const LayeredCoordinates c = assignLayeredCoordinates(li);
    out.width = c.width;
    out.height = c.height;
    for (size_t i = 0; i < nodes.size(); ++i) out.nodes.push_back({c.x[i], c.y[i], li.width[i], li.height[i]});
    for (size_t i = 0; i < chains.size(); ++i) {
        const std::vector<int>& chain = chains[i];
        EdgeGeometry eg;
        eg.src = input.edges[i].src;
        eg.dst = input.edges[i].dst;
        auto at = [&](int b) { return std::make_pair(c.x[static_cast<size_t>(b)], c.y[static_cast<size_t>(b)]); };
        const NodeGeometry& from = out.nodes[static_cast<size_t>(eg.src)];
        const NodeGeometry& to = out.nodes[static_cast<size_t>(eg.dst)];
        const auto tip = clipToBox(to, at(chain[chain.size() - 2]));
        eg.bezier.push_back(clipToBox(from, at(chain[1])));
        for (size_t k = 1; k + 1 < chain.size(); ++k) appendStraightSegment(eg.bezier, at(chain[k]));
        // The line stops an arrowhead short of the box; the arrowhead reaches it.
        const auto last = eg.bezier.back();
        const double dx = tip.first - last.first, dy = tip.second - last.second, len = std::hypot(dx, dy);
        const double keep = len > kArrowLengthPt ? (len - kArrowLengthPt) / len : 0.0;
        appendStraightSegment(eg.bezier, {last.first + dx * keep, last.second + dy * keep});
        eg.has_arrow = true;
        eg.arrow_tip = tip;
        out.edges.push_back(std::move(eg));
    }
    return out;
}

// Runs Graphviz for one input. Called only on the Graphviz thread.
GraphLayout runDot(GVC_t* gvc, const LayoutInput& input, LayoutMethod method) {
    GraphLayout out;
    if (input.nodes.empty()) return out;
    const bool large = input.nodes.size() > static_cast<size_t>(kLayeredLayoutNodes);
    if (method == LayoutMethod::Layered || (method == LayoutMethod::Auto && large)) return runLayered(gvc, input);
    std::vector<Agnode_t*> nodes;
    std::vector<Agedge_t*> edges;
    Agraph_t* g = buildGraph(input, false, nodes, edges);
    if (gvLayout(gvc, g, "dot") != 0) {
        agclose(g);
        out.error = "Graphviz could not lay out the graph";
        return out;
    }
    const boxf bb = GD_bb(g);
    const double top = bb.UR.y;
    out.width = bb.UR.x - bb.LL.x;
    out.height = bb.UR.y - bb.LL.y;
    out.nodes.reserve(nodes.size());
    for (Agnode_t* n : nodes) {
        const pointf c = ND_coord(n);
        out.nodes.push_back({c.x - bb.LL.x, top - c.y, ND_width(n) * kPointsPerInch, ND_height(n) * kPointsPerInch});
    }
    out.edges.reserve(edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
        EdgeGeometry eg;
        eg.src = input.edges[i].src;
        eg.dst = input.edges[i].dst;
        const splines* spl = edges[i] ? ED_spl(edges[i]) : nullptr;
        if (spl && spl->size > 0) {
            const bezier& bz = spl->list[0];
            for (int k = 0; k < bz.size; ++k) eg.bezier.emplace_back(bz.list[k].x - bb.LL.x, top - bz.list[k].y);
            eg.has_arrow = bz.eflag != 0;
            eg.arrow_tip = {bz.ep.x - bb.LL.x, top - bz.ep.y};
        }
        out.edges.push_back(std::move(eg));
    }
    gvFreeLayout(gvc, g);
    agclose(g);
    return out;
}

// Lives on the Graphviz thread; owns the one Graphviz context of the process.
class DotWorker : public QObject {
public:
    GraphLayout layout(const LayoutInput& input, LayoutMethod method = LayoutMethod::Auto) {
        // Graphviz reads and prints numbers with the C library: keep this thread in "C".
        const locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
        const locale_t previous = uselocale(c_locale);
        if (!gvc_) gvc_ = gvContext();
        GraphLayout out = runDot(gvc_, input, method);
        uselocale(previous);
        freelocale(c_locale);
        return out;
    }
    ~DotWorker() override {
        if (gvc_) gvFreeContext(gvc_);
    }

private:
    GVC_t* gvc_ = nullptr;
};

struct GraphvizThread {
    QThread thread;
    DotWorker* worker = nullptr;
};

GraphvizThread* graphvizThread() {
    static GraphvizThread* shared = [] {
        qRegisterMetaType<GraphLayout>();
        auto* t = new GraphvizThread;
        t->thread.setObjectName(QStringLiteral("graphviz"));
        t->worker = new DotWorker;
        t->worker->moveToThread(&t->thread);
        QObject::connect(&t->thread, &QThread::finished, t->worker, &QObject::deleteLater);
        t->thread.start();
        // Stop the thread with the application, before Qt's globals go away.
        qAddPostRoutine([] {
            GraphvizThread* s = graphvizThread();
            s->thread.quit();
            s->thread.wait();
        });
        return t;
    }();
    return shared;
}

std::atomic<quint64> next_request{1};

}  // namespace

GraphvizLayouter::GraphvizLayouter(QObject* parent) : QObject(parent) { graphvizThread(); }

quint64 GraphvizLayouter::requestLayout(const LayoutInput& input) {
    const quint64 id = next_request++;
    DotWorker* worker = graphvizThread()->worker;
    QMetaObject::invokeMethod(
        worker,
        [this_ = QPointer<GraphvizLayouter>(this), worker, input, id] {
            GraphLayout layout = worker->layout(input);
            // Delivered on the layouter's own thread; dropped if it has gone meanwhile.
            QMetaObject::invokeMethod(
                qApp, [this_, id, layout = std::move(layout)] {
                    if (this_) emit this_->layoutReady(id, layout);
                },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
    return id;
}

GraphLayout GraphvizLayouter::layoutBlocking(const LayoutInput& input, LayoutMethod method) {
    GraphLayout out;
    DotWorker* worker = graphvizThread()->worker;
    QMetaObject::invokeMethod(
        worker, [&] { out = worker->layout(input, method); }, Qt::BlockingQueuedConnection);
    return out;
}

}  // namespace hippie::widgets
