#pragma once
// One row per planner of the current run, under the Planners panel's buttons: its name, a
// progress bar fed by the planner's own progress reports, and a Cancel button that stops only
// that planner. A finished row keeps its bar full and says how it ended.
#include <map>

#include <QString>
#include <QWidget>

class QGridLayout;
class QLabel;
class QProgressBar;
class QToolButton;

namespace hippie::studio {

class PlannerRunList : public QWidget {
    Q_OBJECT
public:
    explicit PlannerRunList(QWidget* parent = nullptr);

    void clear();
    void addRunning(const QString& planner);
    void setProgress(const QString& planner, double fraction, const QString& message);
    void setFinished(const QString& planner, double planning_time_s, bool feasible);
    void setSkipped(const QString& planner, const QString& why);  // the planner does not take this problem
    void setFailed(const QString& planner, const QString& message, bool cancelled);

    int rowCount() const { return static_cast<int>(rows_.size()); }
    bool isRunning(const QString& planner) const;
    QProgressBar* progressBar(const QString& planner) const;  // null if no such row
    QToolButton* cancelButton(const QString& planner) const;

signals:
    void cancelRequested(const QString& planner);

private:
    struct Row {
        QLabel* name = nullptr;
        QProgressBar* bar = nullptr;
        QToolButton* cancel = nullptr;
    };
    void finishRow(Row& row, const QString& text, const QString& tooltip);

    QGridLayout* grid_;
    std::map<QString, Row> rows_;
};

}  // namespace hippie::studio
