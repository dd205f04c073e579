#include "widgets/graph/graphviz_layouter.h"

#include <clocale>
#include <locale.h>

#include <QCoreApplication>
#include <QPointer>
#include <QThread>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

namespace hippie::widgets {

namespace {

constexpr double kPointsPerInch = 72.0;
constexpr int kLargeGraphNodes = 1000;  // above this, cheaper crossing minimisation

char* cstr(const char* s) { return const_cast<char*>(s); }  // cgraph's API predates const

// Runs Graphviz for one input. Called only on the Graphviz thread.
GraphLayout runDot(GVC_t* gvc, const LayoutInput& input) {
    GraphLayout out;
    if (input.nodes.empty()) return out;
    Agraph_t* g = agopen(cstr("g"), Agdirected, nullptr);
    agattr(g, AGRAPH, cstr("rankdir"), cstr("TB"));
    agattr(g, AGRAPH, cstr("nodesep"), cstr("0.25"));
    agattr(g, AGRAPH, cstr("ranksep"), cstr("0.35"));
    if (input.nodes.size() > kLargeGraphNodes) {
        agattr(g, AGRAPH, cstr("mclimit"), cstr("0.2"));
        agattr(g, AGRAPH, cstr("nslimit"), cstr("1"));
        agattr(g, AGRAPH, cstr("nslimit1"), cstr("1"));
        agattr(g, AGRAPH, cstr("splines"), cstr("line"));  // spline routing dominates dot's time here
    }
    agattr(g, AGNODE, cstr("shape"), cstr("box"));
    agattr(g, AGNODE, cstr("fixedsize"), cstr("true"));
    agattr(g, AGNODE, cstr("label"), cstr(""));
    Agsym_t* width = agattr(g, AGNODE, cstr("width"), cstr("1"));
    Agsym_t* height = agattr(g, AGNODE, cstr("height"), cstr("0.5"));

    std::vector<Agnode_t*> nodes;
    nodes.reserve(input.nodes.size());
    for (size_t i = 0; i < input.nodes.size(); ++i) {
        const std::string name = "n" + std::to_string(i);
        Agnode_t* n = agnode(g, cstr(name.c_str()), 1);
        agxset(n, width, cstr(std::to_string(input.nodes[i].width_pt / kPointsPerInch).c_str()));
        agxset(n, height, cstr(std::to_string(input.nodes[i].height_pt / kPointsPerInch).c_str()));
        nodes.push_back(n);
    }
    std::vector<Agedge_t*> edges;
    edges.reserve(input.edges.size());
    for (const LayoutEdge& e : input.edges)
        edges.push_back(agedge(g, nodes[static_cast<size_t>(e.src)], nodes[static_cast<size_t>(e.dst)], nullptr, 1));

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
    GraphLayout layout(const LayoutInput& input) {
        // Graphviz reads and prints numbers with the C library: keep this thread in "C".
        const locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
        const locale_t previous = uselocale(c_locale);
        if (!gvc_) gvc_ = gvContext();
        GraphLayout out = runDot(gvc_, input);
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

GraphLayout GraphvizLayouter::layoutBlocking(const LayoutInput& input) {
    GraphLayout out;
    DotWorker* worker = graphvizThread()->worker;
    QMetaObject::invokeMethod(
        worker, [&] { out = worker->layout(input); }, Qt::BlockingQueuedConnection);
    return out;
}

}  // namespace hippie::widgets
