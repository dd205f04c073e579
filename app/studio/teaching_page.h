#pragma once
// Teaching mode: pick a lesson, then step or play through its schedule. A cursor moves along
// time, the blocks so far are drawn, the memory curves grow, and a short text says what is
// happening.
#include <QWidget>

#include "app/studio/lesson_claims.h"
#include "planners/cluster/cluster.h"
#include "planners/sim/trace.h"

class QKeyEvent;
class QLabel;
class QListWidget;
class QPushButton;
class QTimer;

namespace hippie::widgets {
class ScheduleView;
}

namespace hippie::studio {

class MessageLabel;

class TeachingPage : public QWidget {
    Q_OBJECT
public:
    explicit TeachingPage(QWidget* parent = nullptr);

    bool loadLesson(int index);  // false (with the message shown) if it cannot be built
    int lessonCount() const;
    void step();       // to the next compute start or end
    void stepBack();
    void setTime(double t_s);
    void play();
    void pause();
    double time() const { return t_s_; }
    double endTime() const;
    bool isPlaying() const;
    QString explanation() const;
    const std::vector<LessonClaim>& claims() const { return claims_; }  // of the loaded lesson
    const widgets::ScheduleView* view() const { return view_; }

signals:
    void timeChanged(double t_s);

protected:
    void keyPressEvent(QKeyEvent* event) override;  // Right/Space step, Left back, P play/pause

private:
    void advance();

    QListWidget* list_;
    QLabel* idea_;
    QLabel* clock_;
    QLabel* narrative_;
    MessageLabel* message_;
    QPushButton* play_;
    QTimer* timer_;
    widgets::ScheduleView* view_;
    Trace trace_;
    std::vector<LessonClaim> claims_;
    double t_s_ = 0;
};

}  // namespace hippie::studio
