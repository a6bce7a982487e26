package channels

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

func TestCheckContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header    string
		mediaType string
		wantErr   bool
	}{
		{header: "", mediaType: MediaTypeJSON},
		{header: "  ", mediaType: MediaTypeJSON},
		{header: "application/json", mediaType: MediaTypeJSON},
		{header: "application/json; charset=utf-8", mediaType: MediaTypeJSON},
		{header: "Application/JSON;Charset=UTF8", mediaType: MediaTypeJSON},
		{header: `application/json; charset="utf-8"`, mediaType: MediaTypeJSON},
		{header: "application/json; version=2", mediaType: MediaTypeJSON},
		{header: "application/json; charset=latin1", mediaType: MediaTypeJSON, wantErr: true},
		{header: "application/json; charset=utf-16", mediaType: MediaTypeJSON, wantErr: true},
		{header: "application/json; charset", mediaType: MediaTypeJSON, wantErr: true},
		{header: "application/json; =", mediaType: MediaTypeJSON, wantErr: true},
		{header: "application/jsonx", mediaType: MediaTypeJSON, wantErr: true},
		{header: "text/plain", mediaType: MediaTypeJSON, wantErr: true},
		{header: ";;", mediaType: MediaTypeJSON, wantErr: true},
		{header: "application/x-www-form-urlencoded", mediaType: MediaTypeJSON, wantErr: true},
		// Another media type is a parameter, with the same charset rule.
		{header: "application/x-www-form-urlencoded", mediaType: "application/x-www-form-urlencoded"},
		{header: "application/x-www-form-urlencoded; charset=latin1", mediaType: "application/x-www-form-urlencoded", wantErr: true},
		{header: "application/json", mediaType: "application/x-www-form-urlencoded", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.mediaType+" "+tt.header, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.header != "" {
				h.Set("Content-Type", tt.header)
			}
			err := CheckContentType(h, tt.mediaType)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrUnsupportedMediaType)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestAttachmentKind(t *testing.T) {
	t.Parallel()
	for mimeType, want := range map[string]string{
		"image/png":                 envelope.KindImage,
		"Image/PNG":                 envelope.KindImage,
		"IMAGE/JPEG; name=a.jpg":    envelope.KindImage,
		"image/":                    envelope.KindImage,
		" video/mp4":                envelope.KindVideo,
		"audio/ogg; codecs=opus":    envelope.KindAudio,
		"Audio/MPEG":                envelope.KindAudio,
		"application/pdf":           envelope.KindFile,
		"text/plain; charset=utf-8": envelope.KindFile,
		"image":                     envelope.KindFile,
		"imagex/png":                envelope.KindFile,
		"":                          envelope.KindFile,
		"garbage":                   envelope.KindFile,
	} {
		require.Equal(t, want, AttachmentKind(mimeType), mimeType)
	}
}
