package metrics

import "github.com/prometheus/client_golang/prometheus"

// Media holds the metric families of the media vault (enrich), the
// archive and retention. Labels: channel_type, outcome and kind only.
type Media struct {
	// EnrichAttachments counts settled or retried attachments by
	// channel_type and outcome (stored, failed, retry).
	EnrichAttachments *prometheus.CounterVec
	// FetchDuration is the time to fetch and store one attachment, by
	// channel_type and outcome.
	FetchDuration *prometheus.HistogramVec
	// BytesStored counts attachment bytes written to the blob store by
	// channel_type (content already stored is not counted again).
	BytesStored *prometheus.CounterVec
	// ArchiveBytes counts NDJSON bytes written to the archive by
	// channel_type (mio_archive_bytes_written_total).
	ArchiveBytes *prometheus.CounterVec
	// ArchiveMessages counts messages written to the archive by
	// channel_type.
	ArchiveMessages *prometheus.CounterVec
	// RetentionDeleted counts what retention deleted, by kind (inbox,
	// blob).
	RetentionDeleted *prometheus.CounterVec
}

// NewMedia registers the media families on reg (nil: not registered,
// for tests).
func NewMedia(reg prometheus.Registerer) *Media {
	m := &Media{
		EnrichAttachments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_enrich_attachments_total",
			Help: "Attachment fetch outcomes of the enrich worker: stored, failed (final) or retry.",
		}, []string{"channel_type", "outcome"}),
		FetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_attachment_fetch_duration_seconds",
			Help:    "Time to fetch one attachment from its platform and store it, by outcome.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"channel_type", "outcome"}),
		BytesStored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_attachment_bytes_stored_total",
			Help: "Attachment bytes newly written to the blob store (deduplicated content not counted).",
		}, []string{"channel_type"}),
		ArchiveBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_archive_bytes_written_total",
			Help: "NDJSON bytes written to the archive (rewrites of a retried batch included).",
		}, []string{"channel_type"}),
		ArchiveMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_archive_messages_total",
			Help: "Messages written to the archive.",
		}, []string{"channel_type"}),
		RetentionDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_retention_deleted_total",
			Help: "Rows and objects deleted by retention, by kind (inbox, blob).",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.EnrichAttachments, m.FetchDuration, m.BytesStored, m.ArchiveBytes, m.ArchiveMessages, m.RetentionDeleted)
	}
	return m
}
