// Size overrides of the zoo: each family at a small size against the closed-form parameter
// count of its layers (architecture.h says which modules each layer holds), layer names and
// counts, the keys each family accepts and refuses, and the text form users type.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "planners/common/error.h"
#include "planners/model/architecture.h"
#include "planners/model/overrides.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"
#include "planners/schedule/plan_json.h"

using namespace hippie;

namespace {

Graph build(const std::string& name, const std::string& overrides, int batch = 1) {
    ModelSpec spec;
    spec.zoo = name;
    spec.batch_size = batch;
    applyOverrideText(spec, overrides);
    return buildZooModel(spec);
}

// Parameters of each layer, by name, in order.
std::vector<std::pair<std::string, int64_t>> layerParams(const Graph& g) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const Layer& l : g.layers()) out.emplace_back(l.name, l.param_bytes / 4);  // fp32
    return out;
}

std::string errorOf(const std::string& name, const std::string& overrides) {
    try {
        build(name, overrides);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// Closed forms of the modules architecture.h lists.
int64_t linear(int64_t in, int64_t out, bool bias = true) { return in * out + (bias ? out : 0); }
int64_t norm(int64_t channels) { return 2 * channels; }
int64_t conv(int64_t in, int64_t out, int64_t kh, int64_t kw, bool bias = false) {
    return kh * kw * in * out + (bias ? out : 0);
}
int64_t convBn(int64_t in, int64_t out, int64_t k) { return conv(in, out, k, k) + norm(out); }
int64_t lstm(int64_t in, int64_t h) { return 4 * h * (in + h) + 8 * h; }
// Self-attention (fused QKV + projection) with biases.
int64_t selfAttention(int64_t d) { return linear(d, 3 * d) + linear(d, d); }
int64_t feedForward(int64_t d, int64_t d_ff) { return linear(d, d_ff) + linear(d_ff, d); }

using Layers = std::vector<std::pair<std::string, int64_t>>;

}  // namespace

class TestZooOverrides : public QObject {
    Q_OBJECT

private slots:
    void gptAtASmallSize() {
        const int64_t d = 64, vocab = 1000, published_positions = 1024, d_ff = 4 * d;
        const Graph g = build("gpt2-small", "layers=2,d_model=64,heads=4,vocab=1000,seq_len=16", 2);
        const int64_t block = norm(d) + selfAttention(d) + norm(d) + feedForward(d, d_ff);
        const Layers expected{{"embed", (vocab + published_positions) * d},
                              {"block0", block},
                              {"block1", block},
                              {"head", norm(d)}};  // lm_head is tied to the token embedding
        QCOMPARE(layerParams(g), expected);
        QCOMPARE(g.paramCount(), int64_t{229632});
        QCOMPARE(g.name, std::string("gpt2-small[layers=2,d_model=64,heads=4,vocab=1000,seq_len=16]"));
        QCOMPARE(g.source.seq_len, 16);
        QCOMPARE(g.source.overrides.size(), size_t{4});
        for (const Op& op : g.ops)
            if (op.name == "block1.attn_softmax") QCOMPARE(op.output_bytes, int64_t{2} * 4 * 16 * 16 * 4);
        // A shorter position table when asked; never shorter than the sequence.
        const Graph short_table = build("gpt2-small", "layers=2,d_model=64,heads=4,vocab=1000,seq_len=16,positions=16");
        QCOMPARE(layerParams(short_table).front().second, (vocab + 16) * d);
        // d_ff follows d_model unless given.
        const GptArch a = std::get<GptArch>(resolveArchitecture(g.source));
        QCOMPARE(a.d_ff, d_ff);
        QCOMPARE(a.positions, published_positions);
        ModelSpec wide = g.source;
        wide.overrides["d_ff"] = 100;
        QCOMPARE(std::get<GptArch>(resolveArchitecture(wide)).d_ff, int64_t{100});
    }

    void bertAtASmallSize() {
        const int64_t d = 32, vocab = 500, positions = 64;
        const Graph g = build("bert-base", "layers=1,d_model=32,heads=2,vocab=500,positions=64,seq_len=8");
        const int64_t block = selfAttention(d) + norm(d) + feedForward(d, 4 * d) + norm(d);
        const int64_t head = linear(d, d) + linear(d, 2) + linear(d, d) + norm(d) + vocab;  // tied decoder: bias only
        const Layers expected{{"embed", (vocab + positions + 2) * d + norm(d)}, {"block0", block}, {"head", head}};
        QCOMPARE(layerParams(g), expected);
    }

    void transformerAtASmallSize() {
        const int64_t d = 32, d_ff = 64, vocab = 300;
        const Graph g = build("transformer-big", "layers=1,d_model=32,heads=4,d_ff=64,vocab=300,seq_len=8");
        const int64_t enc = selfAttention(d) + norm(d) + feedForward(d, d_ff) + norm(d);
        const int64_t cross = linear(d, d) + linear(d, 2 * d) + linear(d, d);
        const int64_t dec = enc + cross + norm(d);
        const Layers expected{{"embed", vocab * d}, {"enc0", enc}, {"dec0", dec}, {"head", 0}};
        QCOMPARE(layerParams(g), expected);
        QCOMPARE(g.source.seq_len, 8);
    }

    void resnetAtASmallSize() {
        const Graph g = build("resnet50", "blocks1=1,blocks2=2,blocks3=1,blocks4=1,width_mult=0.25,image_size=64,classes=10");
        const std::vector<int64_t> widths{16, 32, 64, 128};
        const std::vector<int> blocks{1, 2, 1, 1};
        Layers expected{{"stem", convBn(3, 16, 7)}};
        int64_t in = 16;
        for (size_t s = 0; s < widths.size(); ++s)
            for (int i = 0; i < blocks[s]; ++i) {
                const int64_t w = widths[s], out = 4 * w;
                int64_t p = convBn(in, w, 1) + convBn(w, w, 3) + conv(w, out, 1, 1) + norm(out);
                if (in != out || (s > 0 && i == 0)) p += conv(in, out, 1, 1) + norm(out);  // downsample
                expected.emplace_back("block" + std::to_string(expected.size() - 1), p);
                in = out;
            }
        expected.emplace_back("head", linear(512, 10));
        QCOMPARE(layerParams(g), expected);
        // The stem's convolution sees the smaller image: 16 channels of 32x32 a sample.
        QCOMPARE(g.ops.front().output_bytes, int64_t{16} * 32 * 32 * 4);
    }

    void vggAtASmallSize() {
        const Graph g = build("vgg16", "convs1=1,convs2=1,convs3=1,convs4=2,convs5=1,width_mult=0.125,fc_width=64,"
                                       "image_size=32,classes=10");
        const Layers expected{{"conv1_1", conv(3, 8, 3, 3, true)},   {"conv2_1", conv(8, 16, 3, 3, true)},
                              {"conv3_1", conv(16, 32, 3, 3, true)}, {"conv4_1", conv(32, 64, 3, 3, true)},
                              {"conv4_2", conv(64, 64, 3, 3, true)}, {"conv5_1", conv(64, 64, 3, 3, true)},
                              {"fc6", linear(64 * 1 * 1, 64)},       {"fc7", linear(64, 64)},
                              {"fc8", linear(64, 10)}};
        QCOMPARE(layerParams(g), expected);
    }

    void inceptionWithoutAuxiliaryClassifier() {
        const int64_t aux = convBn(768, 128, 1) + convBn(128, 768, 5) + linear(768, 1000);
        const Graph full = build("inception-v3", "");
        const Graph no_aux = build("inception-v3", "aux_logits=0");
        QCOMPARE(full.paramCount(), int64_t{27161264});
        QCOMPARE(no_aux.paramCount(), int64_t{27161264} - aux);  // torchvision's aux_logits=False: 23834568
        QCOMPARE(no_aux.paramCount(), int64_t{23834568});
        QCOMPARE(no_aux.layerCount(), full.layerCount());
        // Ten classes change both classifiers.
        const Graph ten = build("inception-v3", "classes=10");
        QCOMPARE(ten.paramCount(), full.paramCount() - linear(2048, 1000) - linear(768, 1000) + linear(2048, 10) +
                                       linear(768, 10));
        // Without the auxiliary classifier the image may be as small as 75 pixels.
        const Graph small = build("inception-v3", "aux_logits=0,width_mult=0.25,image_size=75");
        QCOMPARE(small.layerCount(), full.layerCount());
        QVERIFY(small.paramCount() < full.paramCount() / 10);
    }

    void gnmtAtASmallSize() {
        const int64_t h = 32, vocab = 100;
        const Graph g = build("gnmt-8", "layers=3,hidden=32,vocab=100,seq_len=8");
        const Layers expected{{"embed", vocab * h},
                              {"enc0", 2 * lstm(h, h)},
                              {"enc1", lstm(2 * h, h)},
                              {"enc2", lstm(h, h)},
                              {"dec0", lstm(h, h)},
                              {"attention", 2 * h * h + h + 1 + h},
                              {"dec1", lstm(2 * h, h)},
                              {"dec2", lstm(2 * h, h)},
                              {"head", linear(h, vocab)}};
        QCOMPARE(layerParams(g), expected);
        // Residuals from the third layer of each side on.
        int residuals = 0;
        for (const Op& op : g.ops) residuals += op.kind == "add";
        QCOMPARE(residuals, 2);
    }

    void mlpAtASmallSize() {
        const Graph g = build("mlp", "layers=2,hidden=16,inputs=8,classes=4");
        const Layers expected{{"fc0", linear(8, 16)}, {"fc1", linear(16, 16)}, {"fc2", linear(16, 4)}};
        QCOMPARE(layerParams(g), expected);
    }

    // Overriding every key with its published value changes nothing but the name.
    // A preset is its zoo model at its overrides, nothing else: the same Graph as the spelled-out
    // spec, recorded as that spec, wherever a zoo name is taken (the builder, plan files).
    void presetsAreZooModelsAtTheirOverrides() {
        QCOMPARE(modelPresets().size(), size_t{5});
        for (const ModelPreset& preset : modelPresets()) {
            ModelSpec spelled;
            spelled.zoo = preset.zoo;
            spelled.overrides = preset.overrides;
            spelled.seq_len = preset.seq_len;
            spelled.batch_size = 4;
            const Graph g = build(preset.name, "", 4);
            const Graph expected = buildZooModel(spelled);
            QCOMPARE(g.name, expected.name);
            QCOMPARE(g.source.zoo, preset.zoo);
            QVERIFY(g.source.overrides == preset.overrides);
            QCOMPARE(layerParams(g), layerParams(expected));
            QCOMPARE(g.ops.size(), expected.ops.size());
        }
        // gpt-tiny by formula: a tied LM head, 16 positions, 4 blocks of width 32.
        const int64_t d = 32, block = norm(d) + selfAttention(d) + norm(d) + feedForward(d, 4 * d);
        const Graph gpt = build("gpt-tiny", "");
        QCOMPARE(layerParams(gpt), (Layers{{"embed", (64 + 16) * d}, {"block0", block}, {"block1", block}, {"block2", block},
                                           {"block3", block}, {"head", norm(d)}}));
        // The user's overrides win over the preset's; a longer sequence gets a longer position table.
        const Graph two = build("gpt-tiny", "layers=2,seq_len=32");
        QCOMPARE(two.layerCount(), 4);
        QCOMPARE(two.source.seq_len, 32);
        QCOMPARE(std::get<GptArch>(resolveArchitecture(two.source)).positions, int64_t{32});
        QCOMPARE(build("mlp-tiny", "hidden=8").paramCount(), int64_t{(32 * 8 + 8) + 3 * (8 * 8 + 8) + (8 * 10 + 10)});
        // A plan file naming a preset reads as the zoo model and overrides it stands for.
        const Plan plan = planFromJson(nlohmann::json::parse(R"({"format": "hippie-plan", "version": 1, "planner": "manual", "cluster": "cpu-local",
            "model": {"zoo": "mlp-tiny", "batch_size": 16, "overrides": {"hidden": 8}}, "stages": [{"first_layer": 0, "last_layer": 4}],
            "dp": 1, "micro_batches": 1, "global_batch": 16})"));
        QCOMPARE(plan.model.zoo, std::string("mlp"));
        QCOMPARE(plan.model.overrides, (std::map<std::string, double>{{"classes", 10}, {"hidden", 8}, {"inputs", 32}, {"layers", 4}}));
    }

    void publishedValuesRebuildThePublishedModel() {
        for (const ZooEntry& e : zooModels()) {
            ModelSpec plain, explicit_defaults;
            plain.zoo = explicit_defaults.zoo = e.name;
            for (const auto& [key, value] : defaultOverrideValues(e.name)) setOverride(explicit_defaults, key, value);
            QVERIFY2(!explicit_defaults.overrides.empty(), e.name.c_str());
            const Graph a = buildZooModel(plain), b = buildZooModel(explicit_defaults);
            QVERIFY2(a.paramCount() == b.paramCount() && a.ops.size() == b.ops.size() &&
                         a.totalFwdFlops() == b.totalFwdFlops(),
                     e.name.c_str());
        }
    }

    void defaultValuesAreThePublishedOnes() {
        using Values = std::vector<std::pair<std::string, double>>;
        QCOMPARE(defaultOverrideValues("gpt2-small"), (Values{{"layers", 12}, {"d_model", 768}, {"heads", 12},
                                                              {"d_ff", 3072}, {"vocab", 50257}, {"positions", 1024},
                                                              {"seq_len", 1024}, {"dropout", 0.1}, {"attention_dropout", 0.1}}));
        // Vaswani et al. 2017, Table 3 "big": residual dropout 0.3, none on the attention probabilities.
        const Values transformer = defaultOverrideValues("transformer-big");
        QCOMPARE(transformer[transformer.size() - 2], (std::pair<std::string, double>{"dropout", 0.3}));
        QCOMPARE(transformer.back(), (std::pair<std::string, double>{"attention_dropout", 0.0}));
        QCOMPARE(defaultOverrideValues("resnet101"),
                 (Values{{"blocks1", 3}, {"blocks2", 4}, {"blocks3", 23}, {"blocks4", 3}, {"width_mult", 1},
                         {"image_size", 224}, {"classes", 1000}}));
        QCOMPARE(defaultOverrideValues("gnmt-8"), (Values{{"layers", 4}, {"hidden", 1024}, {"vocab", 32320}, {"seq_len", 50}}));
        QCOMPARE(defaultOverrideValues("mlp"), (Values{{"layers", 8}, {"hidden", 4096}, {"inputs", 1024}, {"classes", 1000}}));
        QVERIFY(defaultOverrideValues("no-such-model").empty());
        for (const ZooEntry& e : zooModels()) {
            const std::vector<OverrideKey>& keys = overrideKeys(e.family);
            QVERIFY2(!keys.empty(), e.family.c_str());
            QCOMPARE(defaultOverrideValues(e.name).size(), keys.size());
            for (const OverrideKey& k : keys) QVERIFY2(k.min <= k.max && !k.meaning.empty(), k.key.c_str());
        }
    }

    void refusedKeysAndValuesNameTheKey_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("overrides");
        QTest::addColumn<QStringList>("mentions");
        const QStringList gpt_keys{"layers", "d_model", "heads", "d_ff", "vocab", "positions", "seq_len"};
        QTest::newRow("gpt: image_size") << "gpt2-small" << "image_size=64" << (QStringList{"image_size"} + gpt_keys);
        QTest::newRow("bert: blocks1") << "bert-base" << "blocks1=1" << QStringList{"blocks1", "bert"};
        QTest::newRow("transformer: positions") << "transformer-big" << "positions=8" << QStringList{"positions"};
        QTest::newRow("resnet: layers") << "resnet50" << "layers=2" << QStringList{"layers", "blocks1", "width_mult"};
        QTest::newRow("vgg: blocks1") << "vgg16" << "blocks1=1" << QStringList{"blocks1", "convs1", "fc_width"};
        QTest::newRow("inception: layers") << "inception-v3" << "layers=3" << QStringList{"layers", "aux_logits"};
        QTest::newRow("gnmt: d_model") << "gnmt-8" << "d_model=64" << QStringList{"d_model", "hidden"};
        QTest::newRow("mlp: seq_len") << "mlp" << "seq_len=8" << QStringList{"seq_len", "inputs"};
        QTest::newRow("zero layers") << "gpt2-small" << "layers=0" << QStringList{"layers", "1", "1024"};
        QTest::newRow("too deep") << "mlp" << "layers=1025" << QStringList{"layers", "1024"};
        QTest::newRow("fractional layers") << "bert-base" << "layers=2.5" << QStringList{"layers", "whole number"};
        QTest::newRow("too wide") << "gnmt-8" << "hidden=65537" << QStringList{"hidden", "65536"};
        QTest::newRow("heads do not divide") << "gpt2-small" << "heads=5" << QStringList{"heads", "d_model", "768"};
        QTest::newRow("new d_model, old heads") << "bert-base" << "d_model=100" << QStringList{"heads", "12", "100"};
        QTest::newRow("positions below seq") << "gpt2-small" << "positions=64,seq_len=128" << QStringList{"positions", "seq_len"};
        QTest::newRow("gnmt one layer") << "gnmt-8" << "layers=1" << QStringList{"layers", "2"};
        QTest::newRow("image too small") << "resnet50" << "image_size=16" << QStringList{"image_size", "32", "4096"};
        QTest::newRow("huge image") << "vgg16" << "image_size=8192" << QStringList{"image_size", "4096"};
        QTest::newRow("inception too small for aux") << "inception-v3" << "image_size=200" << QStringList{"image_size", "aux_logits=0"};
        QTest::newRow("inception too small") << "inception-v3" << "aux_logits=0,image_size=74" << QStringList{"image_size", "75"};
        QTest::newRow("width_mult zero") << "resnet152" << "width_mult=0" << QStringList{"width_mult", "16"};
        QTest::newRow("aux_logits 2") << "inception-v3" << "aux_logits=2" << QStringList{"aux_logits", "0", "1"};
        QTest::newRow("attention too large") << "gpt2-small" << "heads=768,seq_len=65536" << QStringList{"heads", "seq_len"};
    }
    void refusedKeysAndValuesNameTheKey() {
        QFETCH(QString, model);
        QFETCH(QString, overrides);
        QFETCH(QStringList, mentions);
        const QString message = QString::fromStdString(errorOf(model.toStdString(), overrides.toStdString()));
        QVERIFY2(!message.isEmpty(), "no error");
        QVERIFY2(!message.contains('\n'), qPrintable(message));
        QVERIFY2(message.contains(model), qPrintable(message));
        for (const QString& m : mentions) QVERIFY2(message.contains(m), qPrintable(message + " lacks " + m));
    }

    void seqLenIsNotASizeOverride() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.overrides["seq_len"] = 128;  // as a hand-written file might
        try {
            resolveArchitecture(spec);
            QFAIL("seq_len accepted among the overrides");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("seq_len") != std::string::npos, e.what());
        }
    }

    void textFormParsesAndPrints() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        applyOverrideText(spec, " layers = 2 ,seq_len=128,,heads=4,layers=3");
        QCOMPARE(spec.seq_len, 128);
        QCOMPARE(spec.overrides, (std::map<std::string, double>{{"layers", 3}, {"heads", 4}}));
        QCOMPARE(overrideText(spec), std::string("layers=3,heads=4,seq_len=128"));
        QCOMPARE(zooGraphName(spec), std::string("gpt2-small[layers=3,heads=4,seq_len=128]"));
        spec.seq_len = 1024;  // the default is no override
        QCOMPARE(overrideText(spec), std::string("layers=3,heads=4"));
        ModelSpec cnn;
        cnn.zoo = "resnet50";
        applyOverrideText(cnn, "width_mult=0.5");
        QCOMPARE(zooGraphName(cnn), std::string("resnet50[width_mult=0.5]"));
        ModelSpec none;
        none.zoo = "mlp";
        applyOverrideText(none, "");
        QCOMPARE(zooGraphName(none), std::string("mlp"));
    }

    void badTextNamesTheItem_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("no value") << "layers" << "'layers'";
        QTest::newRow("empty value") << "layers=" << "'layers='";
        QTest::newRow("no key") << "=2" << "'=2'";
        QTest::newRow("not a number") << "layers=two" << "two";
        QTest::newRow("trailing junk") << "layers=2x" << "2x";
        QTest::newRow("upper case key") << "Layers=2" << "Layers";
        QTest::newRow("fractional seq_len") << "seq_len=1.5" << "seq_len";
    }
    void badTextNamesTheItem() {
        QFETCH(QString, text);
        QFETCH(QString, mentions);
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        try {
            applyOverrideText(spec, text.toStdString());
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestZooOverrides)
#include "test_zoo_overrides.moc"
