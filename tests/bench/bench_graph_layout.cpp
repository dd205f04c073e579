// Graph layout time of the studio's operator graph view (widgets/graph): the synthetic graph
// of the GUI tests (a chain of ops with a skip edge every third op, 25 ops per layer) laid out
// op by op, as the view does when the layer view is off.
//
//   bench_graph_layout [ops ...] [--method auto|dot|layered]   (default: 1000 5000, auto)
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <QCoreApplication>
#include <QElapsedTimer>

#include "../gui/gui_fixtures.h"
#include "widgets/graph/graphviz_layouter.h"

using namespace hippie;
using namespace hippie::widgets;

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    std::vector<int> sizes;
    LayoutMethod method = LayoutMethod::Auto;
    const char* method_name = "auto";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--method") == 0 && i + 1 < argc) {
            method_name = argv[++i];
            if (std::strcmp(method_name, "dot") == 0)
                method = LayoutMethod::Dot;
            else if (std::strcmp(method_name, "layered") == 0)
                method = LayoutMethod::Layered;
            else if (std::strcmp(method_name, "auto") != 0) {
                std::fprintf(stderr, "--method must be auto, dot or layered\n");
                return 2;
            }
        } else {
            sizes.push_back(std::stoi(argv[i]));
        }
    }
    if (sizes.empty()) sizes = {1000, 5000};
    constexpr int kOpsPerLayer = 25;
    std::printf("%8s %8s %8s %10s %12s\n", "ops", "edges", "method", "layout s", "size (pt)");
    for (int ops : sizes) {
        const LayoutInput in = buildLayoutInput(testing::syntheticGraph(ops, std::max(1, ops / kOpsPerLayer)), false);
        QElapsedTimer timer;
        timer.start();
        const GraphLayout layout = GraphvizLayouter::layoutBlocking(in, method);
        const double seconds = timer.nsecsElapsed() / 1e9;
        if (!layout.error.empty() || layout.nodes.size() != in.nodes.size()) {
            std::fprintf(stderr, "layout of %d ops failed: %s\n", ops, layout.error.c_str());
            return 1;
        }
        std::printf("%8d %8zu %8s %10.2f %5.0fx%-6.0f\n", ops, in.edges.size(), method_name, seconds, layout.width, layout.height);
    }
    return 0;
}
