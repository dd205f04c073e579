#pragma once
// Picks the cluster: a preset, or a preset edited (nodes, devices per node, device type,
// memory, bandwidths), saved to and loaded from cluster JSON.
#include <QGroupBox>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace hippie::studio {

class MessageLabel;
class StudioSession;

class ClusterPanel : public QGroupBox {
    Q_OBJECT
public:
    ClusterPanel(StudioSession* session, QWidget* parent = nullptr);

    bool loadPreset(const QString& name);
    bool openFile(const QString& path);

private:
    void showCluster();   // session -> editors
    void applyEdits();    // editors -> session
    void onOpenClicked();
    void onSaveClicked();

    StudioSession* session_;
    QComboBox* preset_;
    QSpinBox* nodes_;
    QSpinBox* devices_;
    QLineEdit* device_type_;
    QDoubleSpinBox* memory_gib_;
    QDoubleSpinBox* intra_gbps_;
    QDoubleSpinBox* inter_gbps_;
    MessageLabel* message_;
};

}  // namespace hippie::studio
