package files

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/documents/workspace"
)

// link is what a download token says: who may read which version of
// which file, until when.
type link struct {
	User    string         `json:"u"`
	Kind    workspace.Kind `json:"k"`
	ScopeID string         `json:"s"`
	Path    string         `json:"p"`
	Version int            `json:"v"`
	Expires int64          `json:"e"` // Unix seconds
}

// errInvalidLink answers a token that is altered, expired or of another
// scope, whichever it is: a client can only ask for a new link.
var errInvalidLink = httperr.New(http.StatusForbidden, "invalid_link",
	"the download link is expired or not valid; ask GET …/download for a new one")

// sign returns l's token: its JSON and the JSON's HMAC, each unpadded
// base64url, joined by a dot.
func (h *Handler) sign(l link) string {
	b, _ := json.Marshal(l) // strings and numbers: cannot fail
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(h.mac(b))
}

func (h *Handler) mac(b []byte) []byte {
	m := hmac.New(sha256.New, h.cfg.LinkKey)
	m.Write(b)
	return m.Sum(nil)
}

// verify returns what token says, if this server signed it and it has
// not expired.
func (h *Handler) verify(token string) (link, error) {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return link{}, errInvalidLink
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, h.mac(b)) {
		return link{}, errInvalidLink
	}
	var l link
	if err := json.Unmarshal(b, &l); err != nil || !h.cfg.Now().Before(time.Unix(l.Expires, 0)) {
		return link{}, errInvalidLink
	}
	return l, nil
}

// handleDownload is GET /files/{scope}/{scope_id}/download?path=: a link
// to the file's current version, the bucket's when it can presign, else
// a relative reference to this server's signed endpoint.
func (h *Handler) handleDownload(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, true, "path")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := t.q["path"]
	f, err := h.cfg.Files.Stat(r.Context(), t.user, t.scope, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	expires := h.cfg.Now().Add(h.cfg.LinkTTL).UTC().Truncate(time.Second)
	var u string
	if ps, ok := h.cfg.Files.(Presigner); ok {
		u, err = ps.PresignRead(r.Context(), t.user, t.scope, p, f.Version, h.cfg.LinkTTL)
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			h.fail(w, r, err)
			return
		}
	}
	if u == "" {
		tok := h.sign(link{User: t.user, Kind: t.scope.Kind, ScopeID: t.scope.ID, Path: p, Version: f.Version, Expires: expires.Unix()})
		u = "signed?" + url.Values{"token": {tok}}.Encode()
	}
	jsonbody.Write(w, http.StatusOK, struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}{u, expires})
}

// handleSigned is GET /files/{scope}/{scope_id}/signed?token=, without
// credentials: the version the token names, read as its user.
func (h *Handler) handleSigned(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "token")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l, err := h.verify(q["token"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s, err := scopeOf(r, l.User)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if s.Kind != l.Kind || s.ID != l.ScopeID {
		h.fail(w, r, errInvalidLink)
		return
	}
	v, data, err := h.cfg.Files.ReadVersion(r.Context(), l.User, s, l.Path, l.Version)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeBytes(w, l.Path, v.Version, v.SHA256, data, true)
}

// attachmentOf is the Content-Disposition of a download of p: its base
// name.
func attachmentOf(p string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)})
}
