package httpapi

import (
	"net/http"

	"github.com/miohq/mio/httpapi/openapi"
)

// openapiDoc serves an OpenAPI document as JSON (GET /v1/openapi.json
// on the public listener, GET /admin/v1/openapi.json on the admin one),
// without a token: the documents describe the API, they hold no data. The
// ChannelType enum lists the server's registry.
func (s *Server) openapiDoc(doc openapi.Document) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b, err := doc.JSON(s.registry.Types())
		if err != nil {
			s.log.Error("openapi document", "err", err)
			writeError(w, http.StatusInternalServerError, "internal", "internal error")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(b)
	}
}
