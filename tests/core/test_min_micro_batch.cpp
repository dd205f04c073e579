// The smallest micro-batch a model trains on: a BatchNorm over a 1x1 feature map sees one
// value a channel per sample, and training needs 3 (LibTorch refuses 1; over 2 the output is
// +-1 whatever the input). The zoo's graphs record it, plan checks refuse smaller micro-batches
// with a message saying what to change, graph files keep it, and every planner plans within it.
#include <QtTest>

#include <string>

#include <nlohmann/json.hpp>

#include "planner_fixtures.h"
#include "planners/algorithms/registry.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/overrides.h"

using namespace hippie;

namespace {

Graph build(const std::string& name, const std::string& overrides) {
    ModelSpec spec;
    spec.zoo = name;
    spec.batch_size = 1;
    if (!overrides.empty()) applyOverrideText(spec, overrides);
    return buildZooModel(spec);
}

// A one-stage plan of `dp` replicas and `micro_batches` micro-batches over the whole model.
Plan wholeModelPlan(const Graph& g, int global_batch, int dp, int micro_batches) {
    Plan p;
    p.stages = {{0, g.layerCount() - 1}};
    p.dp = dp;
    p.global_batch = global_batch;
    p.micro_batches = micro_batches;
    return p;
}

std::string checkError(const Plan& p, const Graph& g) {
    try {
        checkPlan(p, g, p.deviceCount());
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

class TestMinMicroBatch : public QObject {
    Q_OBJECT
private slots:
    void zooGraphsRecordWhatBatchNormNeeds() {
        // Inception-v3's auxiliary classifier ends in a 5x5 convolution over a 5x5 map: 1x1.
        const Graph inception = build("inception-v3", "");
        QCOMPARE(inception.min_micro_batch, 3);
        QVERIFY2(inception.min_micro_batch_reason.find("head.aux_conv1_bn") != std::string::npos, inception.min_micro_batch_reason.c_str());
        QVERIFY2(inception.min_micro_batch_reason.find("1x1") != std::string::npos, inception.min_micro_batch_reason.c_str());
        // Without it the smallest map is Mixed_7c's 8x8: one sample is enough.
        QCOMPARE(build("inception-v3", "aux_logits=0").min_micro_batch, 1);
        // ResNet-50 at 224 pixels ends at 7x7; at 32 pixels at 1x1, at 64 at 2x2 (4 values).
        QCOMPARE(build("resnet50", "").min_micro_batch, 1);
        QCOMPARE(build("resnet50", "image_size=32").min_micro_batch, 3);
        QCOMPARE(build("resnet50", "image_size=64").min_micro_batch, 1);
        // No BatchNorm, no minimum.
        QCOMPARE(build("vgg16", "image_size=32").min_micro_batch, 1);
        QCOMPARE(build("gpt2-small", "layers=2").min_micro_batch, 1);
    }

    void planChecksRefuseSmallerMicroBatches() {
        const Graph g = build("inception-v3", "");
        // 16 samples over dp 2 in 4 micro-batches: 2 a micro-batch.
        const std::string e = checkError(wholeModelPlan(g, 16, 2, 4), g);
        QVERIFY2(e.find("'micro_batches'") != std::string::npos, e.c_str());
        QVERIFY2(e.find("micro-batches of 2 samples") != std::string::npos, e.c_str());
        QVERIFY2(e.find("at least 3 samples") != std::string::npos, e.c_str());
        QVERIFY2(e.find("aux_conv1_bn") != std::string::npos, e.c_str());
        QVERIFY2(e.find("use fewer micro-batches") != std::string::npos, e.c_str());
        QCOMPARE(checkError(wholeModelPlan(g, 16, 2, 2), g), std::string());  // 4 a micro-batch
        QCOMPARE(checkError(wholeModelPlan(g, 24, 2, 4), g), std::string());  // 3: the least
    }

    void graphFilesKeepTheMinimum() {
        const Graph g = build("resnet50", "image_size=32");
        const Graph back = graphFromJson(graphToJson(g), "round trip");
        QCOMPARE(back.min_micro_batch, 3);
        QCOMPARE(back.min_micro_batch_reason, g.min_micro_batch_reason);
        // A graph without BatchNorm writes no field and reads back 1.
        const auto j = graphToJson(build("vgg16", "image_size=32"));
        QVERIFY(!j.contains("min_micro_batch"));
        QCOMPARE(graphFromJson(j, "vgg").min_micro_batch, 1);
    }

    void everyPlannerPlansWithinIt() {
        // 16 devices and 16 samples: without the minimum, pure data parallelism puts one sample
        // on each device. Each feasible plan must keep 3 samples a micro-batch.
        Problem problem = test::zooProblem("inception-v3", "v100-4x4", 16);
        problem.time_budget_s = 2;
        std::string planned;
        for (const PlannerInfo& info : plannerRegistry()) {
            PlanContext context(problem.time_budget_s);
            const PlannerResult r = info.make()->plan(problem, context);
            if (!r.feasible) continue;
            planned += " " + info.name + "(dp " + std::to_string(r.plan.dp) + ", m " + std::to_string(r.plan.micro_batches) + ")";
            const int64_t samples = r.plan.global_batch / (int64_t{r.plan.dp} * r.plan.micro_batches);
            QVERIFY2(samples >= 3, (info.name + ": " + std::to_string(samples) + " samples a micro-batch").c_str());
            QVERIFY2(checkError(r.plan, problem.graph).empty(), (info.name + ": " + checkError(r.plan, problem.graph)).c_str());
        }
        qInfo("feasible:%s", planned.c_str());
        // The pipeline planners and data parallelism do plan it (placement ones may not fit).
        for (const char* name : {"data-parallel", "hippie", "pipedream", "gpipe-balance"})
            QVERIFY2(planned.find(std::string(" ") + name + "(") != std::string::npos, (std::string(name) + " missing from" + planned).c_str());
    }

    void aGlobalBatchBelowItIsRefused() {
        Problem problem = test::zooProblem("inception-v3", "v100-4x4", 2);
        for (const PlannerInfo& info : plannerRegistry()) {
            PlanContext context(1);
            try {
                const PlannerResult r = info.make()->plan(problem, context);
                QVERIFY2(!r.feasible, (info.name + " planned a global batch of 2").c_str());
            } catch (const Error& e) {
                const std::string m = e.what();
                QVERIFY2(m.find("global batch of 2 samples is too small") != std::string::npos, (info.name + ": " + m).c_str());
                QVERIFY2(m.find("raise the global batch") != std::string::npos, m.c_str());
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestMinMicroBatch)
#include "test_min_micro_batch.moc"
