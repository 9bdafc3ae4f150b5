package paging

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/store"
)

// Count reads the query parameter name into n: a whole number, 0 or
// more; absent leaves n as it is.
func Count[T int | int64](r *http.Request, name string, n *T) error {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil
	}
	i, err := strconv.ParseInt(v, 10, 0)
	if err != nil || i < 0 {
		return httperr.New(http.StatusBadRequest, "invalid_parameter", fmt.Sprintf("%q must be a whole number, 0 or more", name))
	}
	*n = T(i)
	return nil
}

// Page reads a list's ?limit=&cursor=.
func Page(r *http.Request) (store.Page, error) {
	page := store.Page{Cursor: r.URL.Query().Get("cursor")}
	return page, Count(r, "limit", &page.Limit)
}

// NextCursor names the next page of a list whose body API.md gives
// whole (`{"approvals": [...]}`, `{"documents": [...]}`): in the
// X-Next-Cursor header, absent on the last page, so that the body stays
// what API.md says.
func NextCursor(w http.ResponseWriter, cursor string) {
	if cursor != "" {
		w.Header().Set("X-Next-Cursor", cursor)
	}
}
