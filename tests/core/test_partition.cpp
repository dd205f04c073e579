// Contiguous partitions: Megatron's uniform split, the exact min-max split (against brute
// force) and torchgpipe's block partition (against results of its published algorithm).
#include <QtTest>

#include <algorithm>
#include <functional>
#include <random>

#include "planners/algorithms/partition.h"
#include "planners/common/error.h"

using namespace hippie;

namespace {

std::vector<int> sizes(const std::vector<StageRange>& stages) {
    std::vector<int> out;
    for (const StageRange& s : stages) out.push_back(s.last_layer - s.first_layer + 1);
    return out;
}

bool tiles(const std::vector<StageRange>& stages, int layers) {
    int next = 0;
    for (const StageRange& s : stages) {
        if (s.first_layer != next || s.last_layer < s.first_layer) return false;
        next = s.last_layer + 1;
    }
    return next == layers;
}

double largestStage(const std::vector<double>& w, const std::vector<StageRange>& stages) {
    double worst = 0;
    for (const StageRange& s : stages) {
        double sum = 0;
        for (int l = s.first_layer; l <= s.last_layer; ++l) sum += w[static_cast<size_t>(l)];
        worst = std::max(worst, sum);
    }
    return worst;
}

// Every partition of w into k non-empty ranges, as exclusive stage ends, in lexicographic order.
void forEachPartition(int n, int k, const std::function<void(const std::vector<int>&)>& f) {
    std::vector<int> ends;
    std::function<void(int, int)> rec = [&](int from, int left) {
        if (left == 1) {
            ends.push_back(n);
            f(ends);
            ends.pop_back();
            return;
        }
        for (int e = from + 1; e <= n - (left - 1); ++e) {
            ends.push_back(e);
            rec(e, left - 1);
            ends.pop_back();
        }
    };
    rec(0, k);
}

}  // namespace

class TestPartition : public QObject {
    Q_OBJECT
private slots:
    void uniformGivesEarlierStagesTheRemainder() {
        QCOMPARE(sizes(uniformPartition(10, 3)), (std::vector<int>{4, 3, 3}));
        QCOMPARE(sizes(uniformPartition(8, 4)), (std::vector<int>{2, 2, 2, 2}));
        QCOMPARE(sizes(uniformPartition(5, 5)), (std::vector<int>{1, 1, 1, 1, 1}));
        QCOMPARE(sizes(uniformPartition(7, 1)), (std::vector<int>{7}));
        QVERIFY(tiles(uniformPartition(26, 16), 26));
    }

    void tooManyStagesIsAnError() {
        QVERIFY_THROWS_EXCEPTION(Error, uniformPartition(3, 4));
        QVERIFY_THROWS_EXCEPTION(Error, minMaxPartition({1, 2}, 3));
        QVERIFY_THROWS_EXCEPTION(Error, blockPartition({1, 2}, 3));
        QVERIFY_THROWS_EXCEPTION(Error, uniformPartition(3, 0));
        QVERIFY_THROWS_EXCEPTION(Error, minMaxPartition({1, -2, 3}, 2));
    }

    void minMaxHandChecked() {
        // [1,2,3,4 | 5,6]: 10 and 11; any other cut has a stage of at least 15.
        QCOMPARE(sizes(minMaxPartition({1, 2, 3, 4, 5, 6}, 2)), (std::vector<int>{4, 2}));
        // Equal sums: 2,2 | 1,1,1,1 | 4.
        QCOMPARE(sizes(minMaxPartition({2, 2, 1, 1, 1, 1, 4}, 3)), (std::vector<int>{2, 4, 1}));
        // Ties go to the earliest cuts: [1 | 1 | 1,1] rather than [1,1 | 1 | 1].
        QCOMPARE(sizes(minMaxPartition({1, 1, 1, 1}, 3)), (std::vector<int>{1, 1, 2}));
        QCOMPARE(sizes(minMaxPartition({0, 0, 0}, 3)), (std::vector<int>{1, 1, 1}));
    }

    void minMaxIsOptimalWithEarliestCuts() {
        std::mt19937 rng(42);
        for (int trial = 0; trial < 300; ++trial) {
            const int n = 1 + static_cast<int>(rng() % 9), k = 1 + static_cast<int>(rng() % static_cast<unsigned>(n));
            std::vector<double> w;
            for (int i = 0; i < n; ++i) w.push_back(static_cast<double>(rng() % 6));
            double best = -1;
            std::vector<int> first_best;
            forEachPartition(n, k, [&](const std::vector<int>& ends) {
                std::vector<StageRange> st;
                int from = 0;
                for (int e : ends) {
                    st.push_back({from, e - 1});
                    from = e;
                }
                const double v = largestStage(w, st);
                if (best < 0 || v < best) {
                    best = v;
                    first_best = sizes(st);
                }
            });
            const auto got = minMaxPartition(w, k);
            QVERIFY(tiles(got, n));
            QCOMPARE(largestStage(w, got), best);
            QCOMPARE(sizes(got), first_best);  // lexicographically first optimum = earliest cuts
        }
    }

    // Expected sizes are what torchgpipe.balance.blockpartition.solve returns (run on these
    // inputs); the first two are also checked by hand in the comments.
    void blockPartitionReproducesTorchgpipe_data() {
        QTest::addColumn<std::vector<double>>("weights");
        QTest::addColumn<int>("stages");
        QTest::addColumn<std::vector<int>>("expected");
        // Normalised [0,.2,.4,.6,.8,1], splits [3,6]: sizes .6 | 2.4 > .6 + 1, move 4 into the
        // first block: 1.2 | 1.8, and 1.8 <= 1.2 + 1 stops: [[1,2,3,4],[5,6]].
        QTest::newRow("1..6 into 2") << std::vector<double>{1, 2, 3, 4, 5, 6} << 2 << std::vector<int>{4, 2};
        // Splits [2,4,6]: .2 | 1.0 | 1.8; moves give [3,4,6] (.6 | .6 | 1.8, the first .6 being
        // .2+.4 which rounds above .6), then [3,5,6]: .6 | 1.4 | 1.0, and 1.4 <= .6 + 1.
        QTest::newRow("1..6 into 3") << std::vector<double>{1, 2, 3, 4, 5, 6} << 3 << std::vector<int>{3, 2, 1};
        QTest::newRow("6..1 into 2") << std::vector<double>{6, 5, 4, 3, 2, 1} << 2 << std::vector<int>{2, 4};
        QTest::newRow("ends heavy") << std::vector<double>{5, 1, 1, 1, 1, 5} << 2 << std::vector<int>{3, 3};
        QTest::newRow("all equal") << std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1} << 4 << std::vector<int>{2, 2, 2, 2};
        QTest::newRow("heavy ends into 3") << std::vector<double>{10, 1, 1, 1, 1, 1, 1, 1, 1, 10} << 3 << std::vector<int>{3, 3, 4};
        QTest::newRow("transformer-like") << std::vector<double>{0.1, 1, 1, 1, 1, 1, 1, 1, 1, 2} << 4 << std::vector<int>{3, 2, 2, 3};
        QTest::newRow("one spike") << std::vector<double>{1, 100, 1, 1, 1, 1} << 2 << std::vector<int>{3, 3};
        QTest::newRow("1..10 into 4") << std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} << 4 << std::vector<int>{5, 2, 2, 1};
        QTest::newRow("zeros") << std::vector<double>{0, 0, 0, 5, 0, 0} << 3 << std::vector<int>{2, 2, 2};
    }
    void blockPartitionReproducesTorchgpipe() {
        QFETCH(std::vector<double>, weights);
        QFETCH(int, stages);
        QFETCH(std::vector<int>, expected);
        QCOMPARE(sizes(blockPartition(weights, stages)), expected);
    }

    // torchgpipe returns an empty partition here (GPipe then rejects the balance); we fall
    // back to the exact min-max partition.
    void blockPartitionNeverReturnsEmptyStages() {
        const std::vector<double> w{1, 3, 1, 0, 5, 4, 4, 0, 2, 4};
        const auto got = blockPartition(w, 9);
        QVERIFY(tiles(got, 10));
        QCOMPARE(sizes(got), sizes(minMaxPartition(w, 9)));
        std::mt19937 rng(7);
        for (int trial = 0; trial < 200; ++trial) {
            const int n = 1 + static_cast<int>(rng() % 30), k = 1 + static_cast<int>(rng() % static_cast<unsigned>(n));
            std::vector<double> ws;
            for (int i = 0; i < n; ++i) ws.push_back(static_cast<double>(rng() % 4));
            QVERIFY(tiles(blockPartition(ws, k), n));
        }
    }
};

QTEST_GUILESS_MAIN(TestPartition)
#include "test_partition.moc"
