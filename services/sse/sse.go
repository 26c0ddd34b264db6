// Package sse reads and writes Server-Sent Events (the text/event-stream
// framing both OpenAI and Anthropic stream over). The reader has no line
// length cap on purpose: an upstream chunk carrying a large tool-argument or
// image fragment must not kill a stream the way bufio.Scanner's 64 KiB default
// does in other gateways.
package sse

import (
	"bufio"
	"bytes"
	"io"
)

// Event is one dispatched event. Event is empty when the stream did not name
// it (the SSE default type "message").
type Event struct {
	Event string
	Data  []byte
}

// Reader parses an event stream per the WHATWG rules: lines end with \n,
// \r\n or \r; lines starting with ':' are comments; "data" lines accumulate
// joined by \n; one optional space after the colon is removed; a blank line
// dispatches. Fields other than event and data (id, retry) are ignored
// because no caller needs them.
type Reader struct {
	br      *bufio.Reader
	line    []byte // accumulates a line that spans buffer refills
	data    []byte // data of the event being built
	event   string
	hasData bool
	skipLF  bool // last line ended with \r: a following \n belongs to it
	start   bool // the BOM check ran
	done    bool
}

// NewReader reads events from r. The buffer is 1 KiB: every held stream pays
// for it, the upstream body below is already buffered by the transport (so a
// small buffer costs copies, not syscalls), and a longer line grows a
// separate slice.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 1<<10)}
}

// Next returns the next event. Event.Data is only valid until the next call
// (the buffer is reused so a long stream costs no allocation per event);
// copy it to keep it. Next returns io.EOF at the end of the stream; an event
// not followed by a blank line before EOF is still dispatched, since several
// servers end the stream without the final blank line.
func (r *Reader) Next() (Event, error) {
	if r.done {
		return Event{}, io.EOF
	}
	r.data = r.data[:0]
	r.event = ""
	r.hasData = false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF {
				r.done = true
				if len(line) > 0 {
					r.field(line)
				}
				if r.hasData {
					return r.dispatch(), nil
				}
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			// A blank line without data resets the event type (spec).
			r.event = ""
			continue
		}
		r.field(line)
	}
}

func (r *Reader) dispatch() Event {
	d := r.data
	if n := len(d); n > 0 && d[n-1] == '\n' {
		d = d[:n-1]
	}
	return Event{Event: r.event, Data: d}
}

// field applies one non-empty line to the event being built.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return // comment, used as keep-alive
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.event = string(value)
	}
}

// readLine returns the next line without its terminator. The slice may
// alias the bufio buffer and is valid until the next read. At EOF it returns
// the unterminated remainder (possibly empty) with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if !r.start {
		// A leading UTF-8 BOM is not part of the first field name (spec).
		// Peek(3) waits for three bytes, which every real stream has.
		r.start = true
		if b, err := r.br.Peek(3); err == nil && bytes.Equal(b, bom) {
			r.br.Discard(3)
		}
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF && len(r.line) > 0 {
					return r.line, io.EOF
				}
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := lineEnd(buf)
		if i < 0 {
			r.line = append(r.line, buf...)
			r.br.Discard(len(buf))
			continue
		}
		var line []byte
		if len(r.line) == 0 {
			line = buf[:i] // common case: the whole line is buffered, no copy
		} else {
			r.line = append(r.line, buf[:i]...)
			line = r.line
		}
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1)
		return line, nil
	}
}

// lineEnd finds the first \r or \n. Two IndexByte calls (vectorised) beat
// one IndexAny on the long data lines of a stream.
func lineEnd(buf []byte) int {
	i := bytes.IndexByte(buf, '\n')
	seg := buf
	if i >= 0 {
		seg = buf[:i]
	}
	if j := bytes.IndexByte(seg, '\r'); j >= 0 {
		return j
	}
	return i
}

var bom = []byte("\xEF\xBB\xBF")

// Writer writes events and flushes after each one, so that a token reaches
// the client as soon as it is written.
type Writer struct {
	w     io.Writer
	flush func()
	buf   []byte
}

// NewWriter writes to w and calls flush (may be nil) after every event.
func NewWriter(w io.Writer, flush func()) *Writer {
	return &Writer{w: w, flush: flush, buf: make([]byte, 0, 512)}
}

// WriteData writes "data: <data>\n\n".
func (w *Writer) WriteData(data []byte) error {
	w.buf = appendData(w.buf[:0], data)
	return w.emit()
}

// WriteEvent writes "event: <name>\ndata: <data>\n\n".
func (w *Writer) WriteEvent(name string, data []byte) error {
	w.buf = append(w.buf[:0], "event: "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '\n')
	w.buf = appendData(w.buf, data)
	return w.emit()
}

func (w *Writer) emit() error {
	_, err := w.w.Write(w.buf)
	if err == nil && w.flush != nil {
		w.flush()
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil // do not pin one huge frame's buffer for the rest of the stream
	}
	return err
}

// appendData writes data as data lines. JSON never contains a raw newline,
// but a payload that does would otherwise end the frame early, so each line
// gets its own "data:" field (the reader joins them back with \n).
func appendData(buf, data []byte) []byte {
	for {
		buf = append(buf, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			buf = append(buf, data...)
			return append(buf, '\n', '\n')
		}
		buf = append(buf, data[:i]...)
		buf = append(buf, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}
