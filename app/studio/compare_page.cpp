#include "app/studio/compare_page.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStyle>
#include <QStyleOptionHeader>
#include <QTableView>
#include <QVBoxLayout>

#include "widgets/compare/comparison_charts.h"
#include "widgets/compare/comparison_model.h"

namespace hippie::studio {

using widgets::ComparisonModel;

namespace {

// Qt's styles size a header section for a sort arrow as wide as the header is tall (plus a
// margin) on every column, while the arrow drawn takes half that: on the table's two-line
// headers about 14 px a column that pushed the last columns off the page at 1280x800. This
// header reserves what the arrow takes (QCommonStyle's SE_HeaderArrow and SE_HeaderLabel).
class CompactSortHeader : public QHeaderView {
public:
    using QHeaderView::QHeaderView;

protected:
    QSize sectionSizeFromContents(int logical) const override {
        QSize s = QHeaderView::sectionSizeFromContents(logical);
        if (!isSortIndicatorShown() || orientation() != Qt::Horizontal) return s;
        QStyleOptionHeader opt;
        initStyleOption(&opt);
        const int margin = style()->pixelMetric(QStyle::PM_HeaderMargin, &opt, this);
        const int reserved = s.height() + margin, arrow = s.height() / 2 + 2 * margin;
        s.setWidth(s.width() - reserved + arrow);
        return s;
    }
};

}  // namespace

ComparePage::ComparePage(ComparisonModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      caption_(new QLabel(this)),
      charts_(new widgets::ComparisonCharts(model, this)) {
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(ComparisonModel::SortRole);
    proxy_->setDynamicSortFilter(true);
    auto* header = new CompactSortHeader(Qt::Horizontal, table_);
    header->setSectionsClickable(true);  // as QTableView's own header
    header->setHighlightSections(true);
    table_->setHorizontalHeader(header);
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(ComparisonModel::MemoryEfficiencyColumn, Qt::DescendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // The status (with the planner's reason) can be long: it takes the room that is left,
    // elided, and its tooltip holds all of it with the planner's notes; the table never
    // scrolls sideways at 1280x800.
    table_->horizontalHeader()->setSectionResizeMode(ComparisonModel::StatusColumn, QHeaderView::Stretch);
    table_->horizontalHeader()->setMinimumSectionSize(36);
    table_->setTextElideMode(Qt::ElideRight);
    table_->setWordWrap(false);
    table_->setAlternatingRowColors(true);

    // Beside the Cancel button, where it costs no height of the table.
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    caption_->setText(model_->caption());
    connect(model_, &ComparisonModel::captionChanged, caption_, &QLabel::setText);

    auto* cancel = new QPushButton(tr("Cancel selected planner"), this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(caption_, 1);
    bar->addWidget(cancel, 0, Qt::AlignTop);
    auto* top = new QWidget(this);
    auto* top_layout = new QVBoxLayout(top);
    top_layout->setContentsMargins(0, 0, 0, 0);
    top_layout->addWidget(table_);
    top_layout->addLayout(bar);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(top);
    splitter->addWidget(charts_);
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);

    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        const int row = current.isValid() ? proxy_->mapToSource(current).row() : -1;
        charts_->setSelectedRow(row);
        emit modelRowSelected(row);
    });
    connect(cancel, &QPushButton::clicked, this, [this] {
        const int row = selectedModelRow();
        if (row >= 0) emit cancelRequested(model_->index(row, ComparisonModel::PlannerColumn).data().toString());
    });
}

int ComparePage::selectedModelRow() const {
    const QModelIndex current = table_->selectionModel()->currentIndex();
    return current.isValid() ? proxy_->mapToSource(current).row() : -1;
}

void ComparePage::selectModelRow(int row) {
    if (row == selectedModelRow()) return;
    const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

}  // namespace hippie::studio
