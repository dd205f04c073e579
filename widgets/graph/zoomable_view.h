#pragma once
// A QGraphicsView that zooms under the mouse wheel, pans by dragging and reports clicks.
#include <QGraphicsView>

namespace hippie::widgets {

class ZoomableGraphicsView : public QGraphicsView {
    Q_OBJECT
public:
    explicit ZoomableGraphicsView(QWidget* parent = nullptr);

signals:
    void clicked(QPointF scene_pos, bool double_click);
    void navigated();  // the user zoomed (wheel) or panned (drag): the view is theirs now

protected:
    void wheelEvent(QWheelEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QPoint press_pos_;
};

}  // namespace hippie::widgets
