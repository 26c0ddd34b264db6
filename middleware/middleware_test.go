package middleware

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func init() { gin.SetMode(gin.TestMode) }

func envelope(t *testing.T, body string) (typ, msg string) {
	t.Helper()
	var e struct {
		Detail struct {
			Error struct {
				Type    string         `json:"type"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		} `json:"detail"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Detail.Error.Details == nil {
		t.Fatalf("not an envelope: %s", body)
	}
	return e.Detail.Error.Type, e.Detail.Error.Message
}

func TestRecoverRendersPanicAsInternalError(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	e := gin.New()
	e.Use(RequestIDs(), Recover(log), AccessLog(log))
	e.GET("/boom", func(c *gin.Context) { panic("kaboom") })

	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set(HeaderRequestID, "trace-1")
	e.ServeHTTP(w, req)

	if w.Code != 500 {
		t.Fatalf("status %d", w.Code)
	}
	if typ, _ := envelope(t, w.Body.String()); typ != "internal_error" {
		t.Fatalf("type %s", typ)
	}
	if strings.Contains(w.Body.String(), "kaboom") {
		t.Fatal("panic value leaked to the client")
	}
	panics := logs.FilterMessage("panic while serving a request").All()
	if len(panics) != 1 || panics[0].ContextMap()["request_id"] != "trace-1" || panics[0].ContextMap()["stack"] == "" {
		t.Fatalf("panic log: %+v", panics)
	}
	access := logs.FilterMessage("request").All()
	if len(access) != 1 || access[0].ContextMap()["status"] != int64(500) || access[0].ContextMap()["request_id"] != "trace-1" {
		t.Fatalf("access log: %+v", access)
	}
}

func TestRecoverAfterWriteOnlyAborts(t *testing.T) {
	e := gin.New()
	e.Use(Recover(zap.NewNop()))
	e.GET("/half", func(c *gin.Context) {
		c.String(200, "partial")
		c.Writer.Flush()
		panic("late")
	})
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest("GET", "/half", nil))
	if w.Code != 200 || w.Body.String() != "partial" {
		t.Fatalf("%d %q", w.Code, w.Body.String())
	}
}

func TestAdminAuthUnit(t *testing.T) {
	cases := []struct {
		master, header, value string
		status                int
	}{
		{"m", "", "", 401},
		{"m", "Authorization", "Bearer m", 200},
		{"m", "Authorization", "Bearer  m ", 200},
		{"m", "Authorization", "Bearer mm", 401},
		{"m", "X-API-Key", "m", 200},
		{"", "Authorization", "Bearer ", 401},
	}
	for _, tc := range cases {
		e := gin.New()
		e.GET("/a", AdminAuth(tc.master), func(c *gin.Context) { c.Status(200) })
		req := httptest.NewRequest("GET", "/a", nil)
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != tc.status {
			t.Errorf("%+v: %d", tc, w.Code)
		}
		if w.Code == 401 {
			if typ, _ := envelope(t, w.Body.String()); typ != "authentication_error" {
				t.Errorf("%+v: type %s", tc, typ)
			}
		}
	}
}

func TestBodyLimitUnit(t *testing.T) {
	e := gin.New()
	e.POST("/b", BodyLimit(4), func(c *gin.Context) {
		b, err := io.ReadAll(c.Request.Body)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			c.Status(http.StatusRequestEntityTooLarge)
			return
		}
		c.String(200, "%d", len(b))
	})
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest("POST", "/b", strings.NewReader("123456")))
	if w.Code != 413 {
		t.Fatalf("over: %d", w.Code)
	}
	// No Content-Length: the reader stops it.
	req := httptest.NewRequest("POST", "/b", strings.NewReader("123456"))
	req.ContentLength = -1
	w = httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != 413 {
		t.Fatalf("over, chunked: %d", w.Code)
	}
	w = httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest("POST", "/b", strings.NewReader("123")))
	if w.Code != 200 {
		t.Fatalf("under: %d", w.Code)
	}
}

func TestValidRequestID(t *testing.T) {
	for s, want := range map[string]bool{"": false, "a": true, "A-z_0.9": true, "a b": false, "ü": false, strings.Repeat("x", 129): false} {
		if validRequestID(s) != want {
			t.Errorf("%q: %v", s, !want)
		}
	}
	if a, b := newRequestID(), newRequestID(); a == b || !validRequestID(a) {
		t.Fatalf("%q %q", a, b)
	}
}
