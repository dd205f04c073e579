#include "widgets/graph/zoomable_view.h"

#include <cmath>

#include <QMouseEvent>
#include <QWheelEvent>

namespace hippie::widgets {

namespace {
constexpr double kZoomPerWheelStep = 1.2;  // one notch (120 units) zooms by 20%
constexpr int kClickSlopPx = 4;            // a press released further away is a drag
}  // namespace

ZoomableGraphicsView::ZoomableGraphicsView(QWidget* parent) : QGraphicsView(parent) {
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
}

void ZoomableGraphicsView::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    const double factor = std::pow(kZoomPerWheelStep, steps);
    scale(factor, factor);
    event->accept();
    emit navigated();
}

void ZoomableGraphicsView::mousePressEvent(QMouseEvent* event) {
    press_pos_ = event->pos();
    QGraphicsView::mousePressEvent(event);
}

void ZoomableGraphicsView::mouseReleaseEvent(QMouseEvent* event) {
    QGraphicsView::mouseReleaseEvent(event);
    if ((event->pos() - press_pos_).manhattanLength() <= kClickSlopPx)
        emit clicked(mapToScene(event->pos()), false);
    else
        emit navigated();
}

void ZoomableGraphicsView::mouseDoubleClickEvent(QMouseEvent* event) {
    emit clicked(mapToScene(event->pos()), true);
    event->accept();
}

}  // namespace hippie::widgets
