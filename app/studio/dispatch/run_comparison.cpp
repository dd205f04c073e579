#include "app/studio/dispatch/run_comparison.h"

#include <QObject>

#include <map>

namespace hippie::studio {

namespace {

using store::RunSummary;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
const QString kNone = QStringLiteral("–");

QString msText(const std::optional<double>& s) { return s ? QString::number(*s * 1e3, 'f', 2) : kNone; }
QString num(const std::optional<double>& v, int digits) { return v ? QString::number(*v, 'f', digits) : kNone; }

// Metrics the summary rows already show under readable names.
const char* const kSummaryMetrics[] = {store::kMetricStepS, store::kMetricSamplesPerS, store::kMetricFinalLoss, "step_error_percent"};

// "peak_rss_bytes" -> "peak rss bytes": the stored key, read as words.
QString readableName(const QString& key) {
    QString s = key;
    s.replace(QLatin1Char('_'), QLatin1Char(' '));
    return s;
}

}  // namespace

QString workersText(const nlohmann::json& workers) {
    if (!workers.is_array()) return QString::fromStdString(workers.dump());
    QStringList parts;
    for (const nlohmann::json& w : workers) {
        if (!w.is_object()) {
            parts << QString::fromStdString(w.dump());
            continue;
        }
        const std::string host = w.value("host", std::string());
        const int port = w.value("port", 0);
        const int first = w.value("first_rank", 0), count = w.value("rank_count", 0);
        const QString where = host.empty() ? QObject::tr("this machine")
                                           : QString::fromStdString(host) + (port > 0 ? QStringLiteral(":%1").arg(port) : QString());
        parts << (count > 1 ? QObject::tr("%1 ranks %2–%3").arg(where).arg(first).arg(first + count - 1)
                            : QObject::tr("%1 rank %2").arg(where).arg(first));
    }
    return parts.join(QStringLiteral(", "));
}

std::vector<ComparedRow> compareRuns(const dispatch::StoredRun& first, const dispatch::StoredRun& second) {
    std::vector<ComparedRow> rows;
    auto add = [&rows](const QString& name, const QString& x, const QString& y) { rows.push_back({name, x, y}); };
    const RunSummary& x = first.details.summary;
    const RunSummary& y = second.details.summary;
    add(QObject::tr("state"), store::runStateName(x.state), store::runStateName(y.state));
    add(QObject::tr("message"), x.message.isEmpty() ? kNone : x.message, y.message.isEmpty() ? kNone : y.message);
    add(QObject::tr("model"), x.model, y.model);
    add(QObject::tr("cluster"), x.cluster, y.cluster);
    add(QObject::tr("planner"), x.planner, y.planner);
    add(QObject::tr("workers"), workersText(x.workers), workersText(y.workers));
    add(QObject::tr("predicted ms/step"), msText(x.predicted_step_s), msText(y.predicted_step_s));
    add(QObject::tr("measured ms/step"), msText(x.measured_step_s), msText(y.measured_step_s));
    add(QObject::tr("error %"), num(x.errorPercent(), 1), num(y.errorPercent(), 1));
    add(QObject::tr("samples/s"), num(x.measured_samples_per_s, 1), num(y.measured_samples_per_s, 1));
    add(QObject::tr("final loss"), num(x.final_loss, 4), num(y.final_loss, 4));
    std::map<QString, std::pair<QString, QString>> metrics;
    for (const auto& [n, v] : first.details.metrics) metrics[n].first = QString::number(v, 'g', 6);
    for (const auto& [n, v] : second.details.metrics) metrics[n].second = QString::number(v, 'g', 6);
    for (const char* shown : kSummaryMetrics) metrics.erase(QString::fromLatin1(shown));
    for (const auto& [n, v] : metrics) add(readableName(n), v.first.isEmpty() ? kNone : v.first, v.second.isEmpty() ? kNone : v.second);
    if (first.measured && second.measured) {
        const TraceMetrics& mx = first.measured->metrics;
        const TraceMetrics& my = second.measured->metrics;
        add(QObject::tr("measured bubble"), QString::number(mx.bubble_fraction, 'f', 3), QString::number(my.bubble_fraction, 'f', 3));
        add(QObject::tr("measured peak MiB"), QString::number(static_cast<double>(mx.max_peak_memory_bytes) / kBytesPerMiB, 'f', 1),
            QString::number(static_cast<double>(my.max_peak_memory_bytes) / kBytesPerMiB, 'f', 1));
    }
    return rows;
}

}  // namespace hippie::studio
