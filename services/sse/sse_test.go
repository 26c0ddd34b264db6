package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ name, data string }

func readAll(t testing.TB, r io.Reader) ([]ev, error) {
	t.Helper()
	sr := NewReader(r)
	var out []ev
	for {
		e, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev{e.Event, string(e.Data)})
	}
}

// splitReader returns the first k bytes on the first Read and the rest after,
// so every byte boundary of a fixture can be exercised.
type splitReader struct {
	parts [][]byte
}

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.parts) > 0 && len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	return n, nil
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{"openai frames", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`}, {"", "[DONE]"}}},
		{"named events", "event: ping\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			[]ev{{"ping", "{}"}, {"message_stop", `{"type":"message_stop"}`}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []ev{{"a", "1"}, {"", "2"}}},
		{"cr only", "event: a\rdata: 1\r\rdata: 2\r\r", []ev{{"a", "1"}, {"", "2"}}},
		{"mixed endings", "data: 1\r\n\ndata: 2\r\r\ndata: 3\n\r", []ev{{"", "1"}, {"", "2"}, {"", "3"}}},
		{"comments ignored", ": keep-alive\n\n:\ndata: x\n: mid\n\n", []ev{{"", "x"}}},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []ev{{"", "a\nb\n\nc"}}},
		{"no space after colon", "event:x\ndata:y\n\n", []ev{{"x", "y"}}},
		{"only one space removed", "data:  two\n\n", []ev{{"", " two"}}},
		{"field without colon", "data\n\n", []ev{{"", ""}}},
		{"final event without blank line", "data: 1\n\ndata: 2", []ev{{"", "1"}, {"", "2"}}},
		{"final event with single newline", "event: e\ndata: 2\n", []ev{{"e", "2"}}},
		{"event without data not dispatched", "event: a\n\ndata: 1\n\n", []ev{{"", "1"}}},
		{"ignored fields", "id: 7\nretry: 10\nfoo: bar\ndata: 1\n\n", []ev{{"", "1"}}},
		{"bom", "\xEF\xBB\xBFdata: 1\n\n", []ev{{"", "1"}}},
		{"extra blank lines", "\n\n\ndata: 1\n\n\n\n", []ev{{"", "1"}}},
		{"empty", "", nil},
		{"colon in value", "data: {\"a\":\"b:c\"}\n\n", []ev{{"", `{"a":"b:c"}`}}},
		{"long line", "data: " + long + "\n\n", []ev{{"", long}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, r io.Reader) {
				got, err := readAll(t, r)
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("%s: got %d events %q, want %d", how, len(got), trunc(got), len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Fatalf("%s: event %d = %q, want %q", how, i, trunc(got[i:i+1]), trunc(tt.want[i:i+1]))
					}
				}
			}
			check("whole", strings.NewReader(tt.in))
			check("one byte", iotest.OneByteReader(strings.NewReader(tt.in)))
			check("half", iotest.HalfReader(strings.NewReader(tt.in)))
			check("data+EOF", iotest.DataErrReader(strings.NewReader(tt.in)))
			if len(tt.in) < 1000 {
				for k := 0; k <= len(tt.in); k++ {
					check("split", &splitReader{parts: [][]byte{[]byte(tt.in[:k]), []byte(tt.in[k:])}})
				}
			}
		})
	}
}

func trunc(evs []ev) []ev {
	out := make([]ev, len(evs))
	for i, e := range evs {
		if len(e.data) > 40 {
			e.data = e.data[:40] + "..."
		}
		out[i] = e
	}
	return out
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(boom)))
	if e, err := r.Next(); err != nil || string(e.Data) != "1" {
		t.Fatalf("first: %q %v", e.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
}

func TestReaderEOFIsSticky(t *testing.T) {
	r := NewReader(strings.NewReader("data: 1"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("want EOF, got %v", err)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	flushes := 0
	w := NewWriter(&b, func() { flushes++ })
	if err := w.WriteData([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent("message_stop", []byte(`{"type":"message_stop"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteData([]byte("[DONE]")); err != nil {
		t.Fatal(err)
	}
	want := "data: {\"a\":1}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
	if flushes != 3 {
		t.Fatalf("flushes = %d, want 3", flushes)
	}
	// nil flush is allowed
	if err := NewWriter(io.Discard, nil).WriteData([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestWriterMultiLineData(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, nil)
	if err := w.WriteData([]byte("a\nb\r\nc\rd")); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "data: a\ndata: b\ndata: c\ndata: d\n\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	got, _ := readAll(t, &b)
	if len(got) != 1 || got[0].data != "a\nb\nc\nd" {
		t.Fatalf("round trip: %q", got)
	}
}

func TestWriterError(t *testing.T) {
	flushed := false
	w := NewWriter(errWriter{}, func() { flushed = true })
	if err := w.WriteData([]byte("x")); err == nil {
		t.Fatal("want error")
	}
	if flushed {
		t.Fatal("flushed after a failed write")
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriterAllocs(t *testing.T) {
	w := NewWriter(io.Discard, func() {})
	data := []byte(`{"id":"chatcmpl-1","choices":[{"delta":{"content":"hello"}}]}`)
	allocs := testing.AllocsPerRun(100, func() {
		_ = w.WriteData(data)
		_ = w.WriteEvent("content_block_delta", data)
	})
	if allocs != 0 {
		t.Fatalf("allocs per write = %v, want 0", allocs)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: ping\r\ndata: {}\r\n\r\n",
		"event: a\rdata: 1\r\r",
		": c\ndata: a\ndata: b\n\ndata: 2",
		"\xEF\xBB\xBFdata:x\n\n",
		"data\n\nevent\n\n:\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := readAll(t, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		bytewise, err := readAll(t, iotest.OneByteReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != len(bytewise) {
			t.Fatalf("whole %d events, bytewise %d", len(whole), len(bytewise))
		}
		for i := range whole {
			if whole[i] != bytewise[i] {
				t.Fatalf("event %d differs: %q vs %q", i, whole[i], bytewise[i])
			}
		}
		// Writer → reader round trip of the input as one payload.
		var b bytes.Buffer
		if err := NewWriter(&b, nil).WriteData(in); err != nil {
			t.Fatal(err)
		}
		back, err := readAll(t, &b)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(string(in), "\r\n", "\n"), "\r", "\n")
		if len(back) != 1 || back[0].data != want {
			// A leading BOM in the payload is eaten by the reader by design.
			if !(bytes.HasPrefix(in, bom) && len(back) == 1 && back[0].data == want[len(bom):]) {
				t.Fatalf("round trip of %q gave %q", in, back)
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	var in bytes.Buffer
	for range 100 {
		in.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}` + "\n\n")
	}
	src := in.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		r := NewReader(bytes.NewReader(src))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
