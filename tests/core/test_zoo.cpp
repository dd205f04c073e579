// The model zoo: parameter counts against the published figures, FLOPs against the 6*N*tokens
// rule, batch scaling, graph shape (a DAG with real branches) and the layer view.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "planners/common/error.h"
#include "planners/model/zoo.h"

using namespace hippie;

namespace {

Graph build(const std::string& name, int batch = 1, int seq_len = 0, Precision precision = Precision::FP32) {
    ModelSpec spec;
    spec.zoo = name;
    spec.batch_size = batch;
    spec.seq_len = seq_len;
    spec.precision = precision;
    return buildZooModel(spec);
}

bool isGpt(const std::string& name) { return name.rfind("gpt", 0) == 0; }

double relativeError(double actual, double expected) { return std::abs(actual - expected) / expected; }

int64_t sumOutputBytes(const Graph& g) {
    int64_t s = 0;
    for (const Op& op : g.ops) s += op.output_bytes;
    return s;
}

int64_t sumEdgeBytes(const Graph& g) {
    int64_t s = 0;
    for (const Edge& e : g.edges) s += e.bytes;
    return s;
}

int64_t sumTempBytes(const Graph& g) {
    int64_t s = 0;
    for (const Op& op : g.ops) s += op.temp_bytes;
    return s;
}

// Ops that can reach `target` along edges.
std::vector<bool> reachesOp(const Graph& g, int target) {
    std::vector<std::vector<int>> preds(g.ops.size());
    for (const Edge& e : g.edges) preds[static_cast<size_t>(e.dst)].push_back(e.src);
    std::vector<bool> seen(g.ops.size(), false);
    std::vector<int> stack{target};
    seen[static_cast<size_t>(target)] = true;
    while (!stack.empty()) {
        const int v = stack.back();
        stack.pop_back();
        for (int p : preds[static_cast<size_t>(v)])
            if (!seen[static_cast<size_t>(p)]) {
                seen[static_cast<size_t>(p)] = true;
                stack.push_back(p);
            }
    }
    return seen;
}

}  // namespace

class TestZoo : public QObject {
    Q_OBJECT

private:
    static void addModelRows() {
        QTest::addColumn<QString>("model");
        for (const ZooEntry& e : zooModels()) QTest::newRow(e.name.c_str()) << QString::fromStdString(e.name);
    }

private slots:
    void catalogueListsEveryModel() {
        const std::set<std::string> expected{"gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-1.3b",
                                             "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "bert-base", "bert-large",
                                             "resnet50", "resnet101", "resnet152", "vgg16", "vgg19", "inception-v3",
                                             "gnmt-8", "transformer-big", "mlp"};
        std::set<std::string> names;
        for (const ZooEntry& e : zooModels()) {
            QVERIFY2(names.insert(e.name).second, e.name.c_str());
            QVERIFY(!e.family.empty());
            QVERIFY(!e.description.empty());
            QVERIFY(e.published_params > 0);
            QVERIFY(e.default_seq_len >= 0);
            QCOMPARE(findZooModel(e.name), &e);
        }
        QCOMPARE(names, expected);
        QVERIFY(findZooModel("no-such-model") == nullptr);
    }

    void paramCountMatchesPublished_data() { addModelRows(); }
    void paramCountMatchesPublished() {
        QFETCH(QString, model);
        const std::string name = model.toStdString();
        const ZooEntry* entry = findZooModel(name);
        QVERIFY(entry);
        const Graph fp32 = build(name);
        const Graph fp16 = build(name, 1, 0, Precision::FP16);
        const double built = static_cast<double>(fp32.paramCount());
        const QString detail = QStringLiteral("built %1, published %2").arg(built, 0, 'f', 0).arg(entry->published_params, 0, 'f', 0);
        QVERIFY2(relativeError(built, entry->published_params) <= 0.02, qPrintable(detail));
        // Same model in half precision: same count, half the bytes.
        QCOMPARE(fp16.paramCount(), fp32.paramCount());
        QCOMPARE(fp16.totalParamBytes() * 2, fp32.totalParamBytes());
        QCOMPARE(sumOutputBytes(fp16) * 2, sumOutputBytes(fp32));
    }

    // Training FLOPs of a transformer LM are about 6*N*tokens: 2 a parameter a token forward
    // (one multiply-add), 4 backward (input and weight gradients). The rule ignores attention
    // (s*s terms), so those ops are left out; 10% covers what the rule also ignores: norms,
    // activations, softmax and embedding gathers on one side, position embeddings counted in N
    // but never multiplied on the other.
    void gptFlopsFollowSixNTokens_data() {
        QTest::addColumn<QString>("model");
        for (const ZooEntry& e : zooModels())
            if (isGpt(e.name)) QTest::newRow(e.name.c_str()) << QString::fromStdString(e.name);
    }
    void gptFlopsFollowSixNTokens() {
        QFETCH(QString, model);
        const std::string name = model.toStdString();
        const int batch = 2;
        const Graph g = build(name, batch);
        double without_attention = 0, attention_fwd = 0;
        for (const Op& op : g.ops) {
            if (op.kind == "attention") attention_fwd += op.fwd_flops;
            else without_attention += op.fwd_flops + op.bwd_flops;
        }
        const double tokens = static_cast<double>(batch) * g.source.seq_len;
        const double rule = 6.0 * static_cast<double>(g.paramCount()) * tokens;
        QVERIFY2(relativeError(without_attention, rule) < 0.10,
                 qPrintable(QStringLiteral("%1 vs 6NT %2").arg(without_attention).arg(rule)));
        // Scores and context: 2*s*s*d_model each, per sample per block.
        const int blocks = g.layerCount() - 2;
        const double s = g.source.seq_len;
        const double d_model = static_cast<double>(g.ops[0].output_bytes) / 4 / tokens;  // token_embed: tokens x d_model, fp32
        QCOMPARE(attention_fwd, 2 * 2.0 * s * s * d_model * blocks * batch);
    }

    void doublingBatchDoublesCosts_data() { addModelRows(); }
    void doublingBatchDoublesCosts() {
        QFETCH(QString, model);
        const Graph one = build(model.toStdString(), 3);
        const Graph two = build(model.toStdString(), 6);
        QCOMPARE(two.ops.size(), one.ops.size());
        QCOMPARE(two.edges.size(), one.edges.size());
        QCOMPARE(two.totalFwdFlops(), 2 * one.totalFwdFlops());
        QCOMPARE(two.totalBwdFlops(), 2 * one.totalBwdFlops());
        QCOMPARE(sumOutputBytes(two), 2 * sumOutputBytes(one));
        QCOMPARE(sumEdgeBytes(two), 2 * sumEdgeBytes(one));
        QCOMPARE(sumTempBytes(two), 2 * sumTempBytes(one));
        QCOMPARE(two.totalParamBytes(), one.totalParamBytes());
        QCOMPARE(two.batch_size, 6);
    }

    void graphIsConnectedDag_data() { addModelRows(); }
    void graphIsConnectedDag() {
        QFETCH(QString, model);
        const Graph g = build(model.toStdString());
        QVERIFY(!g.ops.empty());
        const std::vector<int> order = g.topologicalOrder();
        QCOMPARE(order.size(), g.ops.size());
        std::vector<int> in_degree(g.ops.size(), 0), out_degree(g.ops.size(), 0);
        for (const Edge& e : g.edges) {
            QVERIFY(e.src >= 0 && e.dst < static_cast<int>(g.ops.size()));
            QVERIFY2(e.src < e.dst, qPrintable(QString::fromStdString(g.ops[e.src].name + " -> " + g.ops[e.dst].name)));
            QVERIFY(e.bytes > 0);
            QVERIFY(g.ops[e.src].layer <= g.ops[e.dst].layer);
            ++in_degree[static_cast<size_t>(e.dst)];
            ++out_degree[static_cast<size_t>(e.src)];
        }
        // One sink, the loss, and every op contributes to it; only layer 0 reads the input.
        const int loss = static_cast<int>(g.ops.size()) - 1;
        QVERIFY(g.ops.back().kind == "cross_entropy");
        const std::vector<bool> reaches = reachesOp(g, loss);
        for (size_t i = 0; i < g.ops.size(); ++i) {
            QVERIFY2(reaches[i], g.ops[i].name.c_str());
            if (in_degree[i] == 0) QVERIFY2(g.ops[i].layer == 0, g.ops[i].name.c_str());
            if (i > 0) QVERIFY(g.ops[i - 1].layer <= g.ops[i].layer);
            QVERIFY(g.ops[i].fwd_flops > 0 && g.ops[i].bwd_flops > 0);
            QVERIFY(g.ops[i].output_bytes > 0);
        }
    }

    void inceptionHasRealBranches() {
        const Graph g = build("inception-v3");
        std::vector<int> in_degree(g.ops.size(), 0), out_degree(g.ops.size(), 0);
        for (const Edge& e : g.edges) {
            ++in_degree[static_cast<size_t>(e.dst)];
            ++out_degree[static_cast<size_t>(e.src)];
        }
        int forks = 0, joins = 0;
        for (size_t i = 0; i < g.ops.size(); ++i) {
            forks += out_degree[i] > 1;
            joins += in_degree[i] > 1;
        }
        // Every one of the 11 modules forks its input and joins its branches in a concat.
        QVERIFY(forks >= 11);
        QVERIFY(joins >= 11);
        for (const Layer& l : g.layers()) {
            if (l.name.rfind("mixed_", 0) != 0) continue;
            const Op& last = g.ops[static_cast<size_t>(l.ops.back())];
            QCOMPARE(last.kind, std::string("concat"));
            QVERIFY2(in_degree[static_cast<size_t>(l.ops.back())] >= 3, l.name.c_str());
        }
    }

    void layerView_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("layers");
        QTest::addColumn<QString>("first");
        QTest::addColumn<QString>("last");
        // Transformers: embeddings + one per block + head.
        QTest::newRow("gpt2-small") << "gpt2-small" << 12 + 2 << "embed" << "head";
        QTest::newRow("gpt2-medium") << "gpt2-medium" << 24 + 2 << "embed" << "head";
        QTest::newRow("gpt2-large") << "gpt2-large" << 36 + 2 << "embed" << "head";
        QTest::newRow("gpt2-xl") << "gpt2-xl" << 48 + 2 << "embed" << "head";
        QTest::newRow("gpt3-1.3b") << "gpt3-1.3b" << 24 + 2 << "embed" << "head";
        QTest::newRow("gpt3-2.7b") << "gpt3-2.7b" << 32 + 2 << "embed" << "head";
        QTest::newRow("gpt3-6.7b") << "gpt3-6.7b" << 32 + 2 << "embed" << "head";
        QTest::newRow("gpt3-13b") << "gpt3-13b" << 40 + 2 << "embed" << "head";
        QTest::newRow("bert-base") << "bert-base" << 12 + 2 << "embed" << "head";
        QTest::newRow("bert-large") << "bert-large" << 24 + 2 << "embed" << "head";
        QTest::newRow("transformer-big") << "transformer-big" << 6 + 6 + 2 << "embed" << "head";
        // ResNets: stem + one per bottleneck + head.
        QTest::newRow("resnet50") << "resnet50" << 1 + 16 + 1 << "stem" << "head";
        QTest::newRow("resnet101") << "resnet101" << 1 + 33 + 1 << "stem" << "head";
        QTest::newRow("resnet152") << "resnet152" << 1 + 50 + 1 << "stem" << "head";
        // VGG: one per conv and per fc.
        QTest::newRow("vgg16") << "vgg16" << 13 + 3 << "conv1_1" << "fc8";
        QTest::newRow("vgg19") << "vgg19" << 16 + 3 << "conv1_1" << "fc8";
        // Inception-v3: 5 stem convs + 11 modules + head.
        QTest::newRow("inception-v3") << "inception-v3" << 5 + 11 + 1 << "conv1a" << "head";
        // GNMT: embeddings + 4 encoder + 4 decoder LSTM layers + attention + head.
        QTest::newRow("gnmt-8") << "gnmt-8" << 1 + 8 + 1 + 1 << "embed" << "head";
        QTest::newRow("mlp") << "mlp" << 9 << "fc0" << "fc8";
    }
    void layerView() {
        QFETCH(QString, model);
        QFETCH(int, layers);
        QFETCH(QString, first);
        QFETCH(QString, last);
        const Graph g = build(model.toStdString(), 2);
        QCOMPARE(g.layerCount(), layers);
        const std::vector<Layer> view = g.layers();
        QCOMPARE(static_cast<int>(view.size()), layers);
        QCOMPARE(QString::fromStdString(view.front().name), first);
        QCOMPARE(QString::fromStdString(view.back().name), last);
        std::set<std::string> names;
        for (const Layer& l : view) {
            QVERIFY2(!l.ops.empty(), l.name.c_str());
            QVERIFY2(names.insert(l.name).second, l.name.c_str());
            QVERIFY(l.fwd_flops > 0);
            for (int id : l.ops) QVERIFY(g.ops[static_cast<size_t>(id)].name.rfind(l.name + ".", 0) == 0);
            if (l.index > 0) QVERIFY2(l.input_bytes > 0, l.name.c_str());
        }
    }

    void defaultsAreRecorded_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("seq_len");
        QTest::newRow("gpt2-small") << "gpt2-small" << 1024;
        QTest::newRow("gpt3-13b") << "gpt3-13b" << 2048;
        QTest::newRow("bert-large") << "bert-large" << 512;
        QTest::newRow("transformer-big") << "transformer-big" << 256;
        QTest::newRow("gnmt-8") << "gnmt-8" << 50;
        QTest::newRow("resnet50") << "resnet50" << 0;
        QTest::newRow("mlp") << "mlp" << 0;
    }
    void defaultsAreRecorded() {
        QFETCH(QString, model);
        QFETCH(int, seq_len);
        const Graph g = build(model.toStdString(), 4, 0, Precision::BF16);
        QCOMPARE(QString::fromStdString(g.name), model);
        QCOMPARE(g.batch_size, 4);
        QCOMPARE(QString::fromStdString(g.source.zoo), model);
        QCOMPARE(g.source.batch_size, 4);
        QCOMPARE(g.source.seq_len, seq_len);
        QCOMPARE(g.source.precision, Precision::BF16);
        QCOMPARE(findZooModel(model.toStdString())->default_seq_len, seq_len);
    }

    void sequenceLengthOverridesDefault() {
        const Graph full = build("gpt2-small");
        const Graph half = build("gpt2-small", 1, 512);
        QCOMPARE(half.source.seq_len, 512);
        QCOMPARE(half.paramCount(), full.paramCount());
        QVERIFY(half.totalFwdFlops() < 0.5 * full.totalFwdFlops());  // attention shrinks quadratically
    }

    void attentionProbabilitiesAreKeptActivations() {
        const Graph g = build("gpt2-small", 2);
        for (const Op& op : g.ops)
            if (op.name == "block0.attn_softmax") {
                QCOMPARE(op.output_bytes, int64_t{2} * 12 * 1024 * 1024 * 4);  // batch*heads*s*s fp32
                return;
            }
        QFAIL("no block0.attn_softmax op");
    }

    // What backward keeps of a GPT block, as autograd keeps it (Korthikanti et al. 2022, section
    // 4.1): the LayerNorms' inputs and outputs, Q, K and V, the softmax's output, the dropped
    // probabilities and their mask, the attention context, the MLP's fc1 and GeLU outputs and the
    // masks of the two dropouts before the residual adds; not the scores (softmax reads its
    // output), nor the attention projection's and fc2's outputs and their dropouts' (only
    // dropouts and residual adds read them). At 2 bytes an element, the paper's 34 s*b*h +
    // 5 a*s^2*b bytes a block; without dropout, 32 s*b*h + 2 a*s^2*b.
    void gptBlockKeepsWhatItsBackwardReads() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.batch_size = 2;
        spec.seq_len = 16;
        spec.overrides = {{"layers", 3}, {"d_model", 64}, {"heads", 4}, {"vocab", 100}};
        const int64_t s = 16, b = 2, h = 64, a = 4;
        spec.precision = Precision::FP16;
        QCOMPARE(buildZooModel(spec).layers()[2].activation_bytes, 34 * s * b * h + 5 * a * s * s * b);
        ModelSpec without = spec;
        without.overrides["dropout"] = 0;
        without.overrides["attention_dropout"] = 0;
        QCOMPARE(buildZooModel(without).layers()[2].activation_bytes, 32 * s * b * h + 2 * a * s * s * b);
        spec.precision = Precision::FP32;  // the masks stay a byte an element
        const Graph g = buildZooModel(spec);
        const Layer block = g.layers()[2];
        QCOMPARE(block.name, std::string("block1"));
        QCOMPARE(block.activation_bytes, 4 * (16 * s * b * h + 2 * a * s * s * b) + 2 * s * b * h + a * s * s * b);
        std::set<std::string> dropped;
        for (int op : block.ops)
            if (!g.ops[static_cast<size_t>(op)].output_kept) dropped.insert(g.ops[static_cast<size_t>(op)].name);
        QCOMPARE(dropped, (std::set<std::string>{"block1.attn_scores", "block1.attn_proj", "block1.attn_resid_dropout",
                                                 "block1.mlp_fc2", "block1.mlp_dropout"}));
        // A ResNet's BatchNorm output feeds only its ReLU (in place in torchvision), a residual
        // sum only the ReLU after it, and Inception's branches only the concat: not kept; the
        // ReLUs keep theirs (their gradient reads it).
        for (const char* model : {"resnet50", "inception-v3"}) {
            const Graph cnn = build(model, 2);
            for (size_t i = 0; i < cnn.ops.size(); ++i) {
                const Op& o = cnn.ops[i];
                if (o.kind == "relu") QVERIFY2(o.output_kept, o.name.c_str());
                if (o.kind == "add") QVERIFY2(!o.output_kept, o.name.c_str());
            }
            for (const Edge& e : cnn.edges)
                if (cnn.ops[static_cast<size_t>(e.src)].kind == "batchnorm" && cnn.ops[static_cast<size_t>(e.dst)].kind == "relu")
                    QVERIFY2(!cnn.ops[static_cast<size_t>(e.src)].output_kept, cnn.ops[static_cast<size_t>(e.src)].name.c_str());
        }
    }

    // Megatron's split of a block: attention by heads (QKV by columns, output projection by
    // rows), the MLP's first linear by columns and second by rows, embedding and LM head by
    // vocabulary; LayerNorms, residual adds and position embeddings replicated.
    void transformerOpsCarryTheirTensorParallelSplit() {
        const Graph g = build("gpt2-small", 1);
        std::map<std::string, TensorParallel> expected = {
            {"embed.token_embed", TensorParallel::Row},       {"embed.position_embed", TensorParallel::Replicated},
            {"embed.sum", TensorParallel::Replicated},        {"block0.ln1", TensorParallel::Replicated},
            {"block0.attn_qkv", TensorParallel::Column},      {"block0.attn_scores", TensorParallel::Column},
            {"block0.attn_softmax", TensorParallel::Column},  {"block0.attn_context", TensorParallel::Column},
            {"block0.attn_proj", TensorParallel::Row},        {"block0.attn_residual", TensorParallel::Replicated},
            {"block0.ln2", TensorParallel::Replicated},       {"block0.mlp_fc1", TensorParallel::Column},
            {"block0.mlp_gelu", TensorParallel::Column},      {"block0.mlp_fc2", TensorParallel::Row},
            {"block0.mlp_residual", TensorParallel::Replicated}, {"head.ln_f", TensorParallel::Replicated},
            {"head.lm_head", TensorParallel::Column},         {"head.loss", TensorParallel::Column}};
        for (const Op& op : g.ops) {
            const auto it = expected.find(op.name);
            if (it == expected.end()) continue;
            QVERIFY2(op.tensor_parallel == it->second, (op.name + " is " + toString(op.tensor_parallel)).c_str());
            expected.erase(it);
        }
        for (const auto& [name, kind] : expected) QFAIL(("no op " + name).c_str());
        // Only the LayerNorms' scale and shift stay whole in a block: 4 h parameters of 12 h^2 + 13 h.
        int64_t replicated = 0;
        for (const Op& op : g.ops)
            if (op.layer == 1 && op.tensor_parallel == TensorParallel::Replicated) replicated += op.param_bytes / 4;
        QCOMPARE(replicated, int64_t{4} * 768);
        // Degrees must divide the 12 heads; nothing of a CNN or an MLP splits.
        QCOMPARE(g.tensor_parallel_divisor, 12);
        for (int tp : {1, 2, 3, 4, 6, 12}) QVERIFY(g.tensorParallelFits(tp));
        for (int tp : {0, 5, 8, 16}) QVERIFY(!g.tensorParallelFits(tp));
        QVERIFY(build("bert-large").tensorParallelFits(16));
        for (const char* name : {"resnet50", "mlp", "gnmt-8"}) {
            QVERIFY2(build(name).tensorParallelFits(1), name);
            QVERIFY2(!build(name).tensorParallelFits(2), name);
        }
    }

    // VGG trains with dropout 0.5 on fc6's and fc7's outputs (Simonyan & Zisserman, 3.1): one
    // dropout op each after its ReLU, its byte-an-element mask kept for backward (the ReLU
    // keeps its own output, which its gradient reads); `dropout=0` removes them.
    void vggFullyConnectedLayersHaveTheirDropout() {
        const Graph g = build("vgg16", 2);
        std::vector<std::string> dropouts;
        for (size_t i = 0; i < g.ops.size(); ++i)
            if (const Op& o = g.ops[i]; o.kind == "dropout") {
                dropouts.push_back(o.name);
                QCOMPARE(o.output_bytes, int64_t{2} * 4096 * 4);
                QCOMPARE(o.saved_bytes, int64_t{2} * 4096);
                QCOMPARE(g.ops[i - 1].kind, std::string("relu"));
                QVERIFY(g.ops[i - 1].output_kept);
            }
        QCOMPARE(dropouts, (std::vector<std::string>{"fc6.dropout", "fc7.dropout"}));
        ModelSpec without;
        without.zoo = "vgg16";
        without.batch_size = 2;
        without.overrides["dropout"] = 0;
        const Graph none = buildZooModel(without);
        QCOMPARE(none.ops.size(), g.ops.size() - 2);
        // fc7 keeps its dropout's output too (fc8's weight gradient reads it) and the mask.
        QCOMPARE(none.layers()[none.layerCount() - 2].activation_bytes + 2 * 4096 * 4 + 2 * 4096,
                 g.layers()[g.layerCount() - 2].activation_bytes);
    }

    void convolutionsHaveIm2colWorkspace() {
        const Graph g = build("vgg16");
        const Op& conv = g.ops.front();
        QCOMPARE(conv.name, std::string("conv1_1.conv"));
        QCOMPARE(conv.temp_bytes, int64_t{3} * 3 * 3 * 224 * 224 * 4);
        QCOMPARE(conv.fwd_flops, 2.0 * 3 * 3 * 3 * 64 * 224 * 224);
        // On the image there is no input gradient to compute: the weight gradient alone.
        QCOMPARE(conv.bwd_flops, conv.fwd_flops);
        const auto it = std::find_if(g.ops.begin(), g.ops.end(), [](const Op& o) { return o.name == "conv1_2.conv"; });
        QVERIFY(it != g.ops.end());
        const Op& second = *it;
        QCOMPARE(second.fwd_flops, 2.0 * 3 * 3 * 64 * 64 * 224 * 224);
        QCOMPARE(second.bwd_flops, 2 * second.fwd_flops);
    }

    // The first weighted op of every CNN and of the MLP reads only the step's data: its
    // backward is forward's FLOPs (weight gradient); every later conv or linear's is twice.
    void opsOnTheDataComputeNoInputGradient() {
        for (const char* name : {"resnet50", "vgg16", "inception-v3", "mlp"}) {
            const Graph g = build(name);
            std::vector<bool> consumes(g.ops.size(), false);
            for (const Edge& e : g.edges) consumes[static_cast<size_t>(e.dst)] = true;
            int on_data = 0;
            for (size_t i = 0; i < g.ops.size(); ++i) {
                const Op& op = g.ops[i];
                if (op.kind != "conv2d" && op.kind != "matmul") continue;
                const bool first = !consumes[i];
                on_data += first;
                QVERIFY2(op.bwd_flops == (first ? 1.0 : 2.0) * op.fwd_flops, (std::string(name) + ": " + op.name).c_str());
            }
            QVERIFY2(on_data == 1, name);
        }
    }

    // The bytes an op moves (what bounds a memory-bound op, CostModel) are what its forward
    // reads and writes once: every input edge's tensor and its own output (a dropout's mask
    // too, Op::saved_bytes). An op on the step's
    // data reads no edge, but the data: at least its output, and never less than that.
    void opsMoveTheirInputsAndTheirOutput() {
        for (const char* name : {"gpt2-small", "bert-base", "transformer-big", "gnmt-8", "resnet50", "inception-v3", "mlp"}) {
            const Graph g = build(name, 2);
            std::vector<int64_t> read(g.ops.size(), 0);
            std::vector<bool> consumes(g.ops.size(), false);
            for (const Edge& e : g.edges) {
                read[static_cast<size_t>(e.dst)] += e.bytes;
                consumes[static_cast<size_t>(e.dst)] = true;
            }
            int exact = 0;
            for (size_t i = 0; i < g.ops.size(); ++i) {
                const Op& op = g.ops[i];
                const std::string what = std::string(name) + ": " + op.name;
                QVERIFY2(op.moved_bytes > 0, what.c_str());
                if (!consumes[i]) {
                    QVERIFY2(op.moved_bytes >= op.output_bytes, what.c_str());
                    continue;
                }
                QVERIFY2(op.moved_bytes == op.output_bytes + op.saved_bytes + read[i],
                         (what + ": moves " + std::to_string(op.moved_bytes) + ", output " + std::to_string(op.output_bytes) + " + inputs " +
                          std::to_string(read[i]))
                             .c_str());
                ++exact;
            }
            QVERIFY2(exact > 0, name);
        }
    }

    void unknownModelNamesTheKnownOnes() {
        try {
            build("gpt5-huge");
            QFAIL("no error for an unknown model");
        } catch (const Error& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("gpt5-huge"), qPrintable(message));
            for (const ZooEntry& entry : zooModels()) QVERIFY2(message.contains(QString::fromStdString(entry.name)), qPrintable(message));
        }
    }

    void badSizesAreRejected_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("seq_len");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("zero batch") << 0 << 0 << "batch size";
        QTest::newRow("negative batch") << -4 << 0 << "batch size";
        QTest::newRow("negative sequence") << 1 << -1 << "sequence length";
    }
    void badSizesAreRejected() {
        QFETCH(int, batch);
        QFETCH(int, seq_len);
        QFETCH(QString, mentions);
        try {
            build("bert-base", batch, seq_len);
            QFAIL("no error for a bad size");
        } catch (const Error& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains(mentions) && message.contains("bert-base"), qPrintable(message));
        }
    }
};

QTEST_GUILESS_MAIN(TestZoo)
#include "test_zoo.moc"
