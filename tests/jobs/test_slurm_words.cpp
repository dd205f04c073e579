// srun's word on a task, as a Slurm run's failure message ranks it: the task whose death took the
// others down is named first. (The real-cluster test, tests/slurm/test_slurm.sh, kills a task
// and checks the message names it; srun may report the others' broken pipes before it.)
#include <QtTest>

#include "app/dispatch/slurm_job.h"

using hippie::dispatch::srunConsequence;

class TestSlurmWords : public QObject {
    Q_OBJECT
private slots:
    void consequencesOfAnotherTasksEnd() {
        QVERIFY(srunConsequence(QStringLiteral("Exited with exit code 1")));
        QVERIFY(srunConsequence(QStringLiteral("Broken pipe")));
        QVERIFY(srunConsequence(QStringLiteral("Terminated")));
    }

    void causes() {
        QVERIFY(!srunConsequence(QStringLiteral("Killed")));
        QVERIFY(!srunConsequence(QStringLiteral("Segmentation fault")));
        QVERIFY(!srunConsequence(QStringLiteral("Aborted")));
        QVERIFY(!srunConsequence(QStringLiteral("Out Of Memory")));
    }
};

QTEST_GUILESS_MAIN(TestSlurmWords)
#include "test_slurm_words.moc"
