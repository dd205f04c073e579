#pragma once
// A QCustomPlot ticker for an axis in seconds that labels its ticks in another unit (ms, µs):
// the tick positions stay QCustomPlot's nice steps, the labels are scaled.
#include <qcustomplot.h>

#include "widgets/common/time_units.h"

namespace hippie::widgets {

class TimeTicker : public QCPAxisTicker {
public:
    void setUnit(const TimeUnit& unit) { unit_ = unit; }
    const TimeUnit& unit() const { return unit_; }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        // Rounding noise of the scaled step (0.30000000004) must not show.
        const double scaled = tick * unit_.per_second;
        return QCPAxisTicker::getTickLabel(std::abs(scaled) < 1e-9 ? 0.0 : scaled, locale, format, precision);
    }

private:
    TimeUnit unit_;
};

}  // namespace hippie::widgets
