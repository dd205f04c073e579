#include "app/studio/teaching_page.h"

#include <exception>

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include "app/studio/lessons.h"
#include "app/studio/message_label.h"
#include "app/studio/teaching_narrative.h"
#include "planners/algorithms/evaluate.h"
#include "widgets/common/units.h"
#include "widgets/gantt/schedule_view.h"

namespace hippie::studio {

namespace {
constexpr int kFrameIntervalMs = 40;
constexpr double kFramesPerIteration = 250;  // playing one iteration takes about ten seconds
}  // namespace

TeachingPage::TeachingPage(QWidget* parent)
    : QWidget(parent),
      list_(new QListWidget(this)),
      idea_(new QLabel(this)),
      clock_(new QLabel(this)),
      narrative_(new QLabel(this)),
      message_(new MessageLabel(this)),
      play_(new QPushButton(tr("Play"), this)),
      timer_(new QTimer(this)),
      view_(new widgets::ScheduleView(this)) {
    for (const Lesson& l : lessons()) list_->addItem(QString::fromStdString(l.title));
    view_->setMemoryAxisFromZero(false);  // the lessons compare how memory rises, not its floor
    // As wide as its longest title: at 200 px "ZeRO-3: parameters sharded too (FSDP)" was cut,
    // over a horizontal scroll bar.
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_->setFixedWidth(list_->sizeHintForColumn(0) + 2 * list_->frameWidth() + list_->verticalScrollBar()->sizeHint().width());
    idea_->setWordWrap(true);
    narrative_->setWordWrap(true);
    narrative_->setMinimumHeight(90);
    narrative_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    narrative_->setStyleSheet(QStringLiteral("background: #fffbe6; border: 1px solid #e6d9a8; padding: 6px;"));

    auto* back = new QPushButton(tr("◀ Step"), this);
    auto* forward = new QPushButton(tr("Step ▶"), this);
    auto* reset = new QPushButton(tr("Reset"), this);
    auto* controls = new QHBoxLayout;
    controls->addWidget(reset);
    controls->addWidget(back);
    controls->addWidget(play_);
    controls->addWidget(forward);
    controls->addWidget(clock_, 1);

    auto* right = new QWidget(this);
    auto* right_layout = new QVBoxLayout(right);
    right_layout->setContentsMargins(0, 0, 0, 0);
    right_layout->addWidget(idea_);
    right_layout->addLayout(controls);
    right_layout->addWidget(view_, 1);
    right_layout->addWidget(narrative_);
    right_layout->addWidget(message_);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(list_);
    layout->addWidget(right, 1);

    timer_->setInterval(kFrameIntervalMs);
    connect(timer_, &QTimer::timeout, this, &TeachingPage::advance);
    connect(list_, &QListWidget::currentRowChanged, this, &TeachingPage::loadLesson);
    connect(back, &QPushButton::clicked, this, &TeachingPage::stepBack);
    connect(forward, &QPushButton::clicked, this, &TeachingPage::step);
    connect(reset, &QPushButton::clicked, this, [this] {
        pause();
        setTime(0);
    });
    connect(play_, &QPushButton::clicked, this, [this] { isPlaying() ? pause() : play(); });
    setFocusPolicy(Qt::StrongFocus);
    // Space would press the focused button instead of stepping: the page takes the keys.
    for (QPushButton* b : {back, forward, reset, play_}) b->setFocusPolicy(Qt::NoFocus);
}

void TeachingPage::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
    case Qt::Key_Right:
    case Qt::Key_Space: step(); break;
    case Qt::Key_Left: stepBack(); break;
    case Qt::Key_P: isPlaying() ? pause() : play(); break;
    default: QWidget::keyPressEvent(event); return;
    }
    event->accept();
}

int TeachingPage::lessonCount() const { return static_cast<int>(lessons().size()); }

bool TeachingPage::loadLesson(int index) {
    if (index < 0 || index >= lessonCount()) return false;
    pause();
    const Lesson& lesson = lessons()[static_cast<size_t>(index)];
    QString dp_text;  // "4", or per stage "(3,1)"
    try {
        // Lessons are small (a few pipeline stages, a few micro-batches): simulated in milliseconds.
        LessonRun run = runLesson(index);
        trace_ = std::move(run.trace);
        claims_ = std::move(run.claims);
        view_->setTrace(trace_, &run.cluster, &run.plan);
        dp_text = QString::fromStdString(run.plan.dpText());
    } catch (const std::exception& e) {
        message_->showError(tr("Lesson '%1' could not be built: %2").arg(QString::fromStdString(lesson.title), QString::fromUtf8(e.what())));
        return false;
    }
    if (list_->currentRow() != index) list_->setCurrentRow(index);
    setFocus(Qt::OtherFocusReason);  // Right/Space step at once, not the lesson list
    // The lesson's text, then what the simulation says about it (computed, not written).
    idea_->setText(QStringLiteral("<b>%1.</b> %2<br><i>%3</i>")
                       .arg(QString::fromStdString(lesson.title), QString::fromStdString(lesson.idea),
                            QString::fromStdString(claimsText(claims_)).toHtmlEscaped()));
    // Tensor parallelism, sequence parallelism and ZeRO only where the lesson uses them.
    QString degrees = QString::number(lesson.tp);
    if (!lesson.stage_tp.empty()) {
        QStringList each;
        for (int t : lesson.stage_tp) each << QString::number(t);
        degrees = QStringLiteral("(%1) per stage").arg(each.join(QLatin1Char(',')));
    }
    const QString extras = (lesson.tp > 1 ? tr(" × tp %1").arg(degrees) : QString()) +
                           (lesson.sequence_parallel ? tr(" with sequence parallelism") : QString()) +
                           (lesson.zero_stage > 0 ? tr(", ZeRO-%1").arg(lesson.zero_stage) : QString());
    message_->showInfo(tr("%1 on %2: pp %3 × dp %4%5, %6 micro-batches, %7 schedule")
                           .arg(QString::fromStdString(lesson.model.zoo), QString::fromStdString(lesson.cluster))
                           .arg(lesson.pp)
                           .arg(dp_text)
                           .arg(extras)
                           .arg(lesson.micro_batches)
                           .arg(QString::fromLatin1(toString(lesson.schedule))));
    setTime(0);
    return true;
}

double TeachingPage::endTime() const { return view_->endTime(); }

void TeachingPage::setTime(double t_s) {
    t_s_ = std::clamp(t_s, 0.0, endTime());
    view_->setRevealTime(t_s_);
    clock_->setText(tr("t = %1 of %2").arg(widgets::formatSeconds(t_s_), widgets::formatSeconds(endTime())));
    narrative_->setText(explanation());
    emit timeChanged(t_s_);
}

QString TeachingPage::explanation() const { return QString::fromStdString(explainMoment(trace_, t_s_)); }

void TeachingPage::step() { setTime(nextEventTime(trace_, t_s_)); }
void TeachingPage::stepBack() { setTime(previousEventTime(trace_, t_s_)); }

void TeachingPage::play() {
    if (t_s_ >= endTime()) setTime(0);
    timer_->start();
    play_->setText(tr("Pause"));
}

void TeachingPage::pause() {
    timer_->stop();
    play_->setText(tr("Play"));
}

bool TeachingPage::isPlaying() const { return timer_->isActive(); }

void TeachingPage::advance() {
    setTime(t_s_ + endTime() / kFramesPerIteration);
    if (t_s_ >= endTime()) pause();
}

}  // namespace hippie::studio
