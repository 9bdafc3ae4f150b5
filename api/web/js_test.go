package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestMarkdown runs the page's Markdown renderer in the browser.
func TestMarkdown(t *testing.T) {
	p := open(t, newContractFake(t, nil))
	render := func(src string) string {
		b, _ := json.Marshal(src)
		return webtest.Eval[string](p, fmt.Sprintf(`import("/static/markdown.js").then((m) => m.renderMarkdown(%s))`, b))
	}
	const link = ` target="_blank" rel="noopener noreferrer nofollow"`
	for _, tc := range []struct{ in, want string }{
		{"<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"},
		{`<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>"},
		{"[click](javascript:alert(1))", "<p>click</p>"},
		{"[x](data:text/html,hi)", "<p>x</p>"},
		{"[site](https://example.com/a?b=1&c=2)", `<p><a href="https://example.com/a?b=1&amp;c=2"` + link + `>site</a></p>`},
		{"[Go](https://en.wikipedia.org/wiki/Go_(programming_language))", `<p><a href="https://en.wikipedia.org/wiki/Go_(programming_language)"` + link + `>Go</a></p>`},
		{"[mail](mailto:ada@example.com)", `<p><a href="mailto:ada@example.com"` + link + `>mail</a></p>`},
		{"see https://go.dev/doc.", `<p>see <a href="https://go.dev/doc"` + link + `>https://go.dev/doc</a>.</p>`},
		{"# Title\n\nSome *it* and **b** and `<code>`", "<h1>Title</h1>\n<p>Some <em>it</em> and <strong>b</strong> and <code>&lt;code&gt;</code></p>"},
		{"### Three ###", "<h3>Three</h3>"},
		{"#hashtag", "<p>#hashtag</p>"},
		{"```js\nif (a < b) { x(\"**no**\") }\n```\nafter", "<pre><code class=\"language-js\">if (a &lt; b) { x(&quot;**no**&quot;) }</code></pre>\n<p>after</p>"},
		{"```\nunclosed, as while streaming", "<pre><code>unclosed, as while streaming</code></pre>"},
		{"- one\n- two\n  - nested\n\n1. first\n2. second", "<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>\n<ol><li>first</li><li>second</li></ol>"},
		{"3. three\n4. four", `<ol start="3"><li>three</li><li>four</li></ol>`},
		{"line one\nline two", "<p>line one<br>line two</p>"},
		{"snake_case_name and 2 * 3 * 4", "<p>snake_case_name and 2 * 3 * 4</p>"},
		{"_it_ __bold__ ~~gone~~", "<p><em>it</em> <strong>bold</strong> <del>gone</del></p>"},
		{"> quoted **text**", "<blockquote><p>quoted <strong>text</strong></p></blockquote>"},
		{"a\n\n---\n\nb", "<p>a</p>\n<hr>\n<p>b</p>"},
		{"`a [x](https://e.com) b`", "<p><code>a [x](https://e.com) b</code></p>"},
		{"[**bold** link](https://e.com)", `<p><a href="https://e.com"` + link + `><strong>bold</strong> link</a></p>`},
	} {
		if got := render(tc.in); got != tc.want {
			t.Errorf("renderMarkdown(%q)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	// Whatever the input, no tag or attribute of it survives.
	for _, in := range []string{
		`[x](https://e.com/" onmouseover="alert(1))`,
		`[x](https://e.com/'onmouseover='alert(1)')`,
		"<a href=\"javascript:alert(1)\">x</a>",
		"```\"><script>alert(1)</script>\n```",
		"**<b onclick=alert(1)>**",
		"[a](https://e.com)<svg onload=alert(1)>",
	} {
		got := render(in)
		for _, bad := range []string{"<script", "<svg", "<b ", `onmouseover="`, "onmouseover='", "<b onclick", `href="javascript`} {
			if strings.Contains(got, bad) {
				t.Errorf("renderMarkdown(%q) = %s: it contains %s", in, got, bad)
			}
		}
	}
}

// TestSSEParser runs the page's event-stream parser in the browser, with
// the stream cut at every possible point and read as UTF-8 bytes split
// inside a character.
func TestSSEParser(t *testing.T) {
	p := open(t, newContractFake(t, nil))
	type event struct{ ID, Event, Data string }
	type result struct {
		Whole          []event
		AllSplitsAgree bool
		CharByChar     bool
		Bytes          []event
	}
	got := webtest.Eval[result](p, `(async () => {
		const { SSEParser, readEvents } = await import("/static/sse.js");
		const stream = ": hello\n\nid: 1\nevent: run.started\ndata: {\"a\":1}\n\n" +
			"id: 2\r\nevent: response.chunk\r\ndata: line1\r\ndata:line2\r\n\r\n" +
			": ping\n\n" +
			"id: 3\rdata: x\r\r" +
			"event: ignored-without-data\n\n" +
			"id: 4\ndata: cut off by the end";
		const norm = (evs) => evs.map((e) => ({ ID: e.id, Event: e.event, Data: e.data }));
		const parse = (chunks) => { const p = new SSEParser(); return norm(chunks.flatMap((c) => p.push(c))); };
		const whole = parse([stream]);
		let allSplitsAgree = true;
		for (let i = 0; i <= stream.length; i++) {
			if (JSON.stringify(parse([stream.slice(0, i), stream.slice(i)])) !== JSON.stringify(whole)) allSplitsAgree = false;
		}
		const charByChar = JSON.stringify(parse([...stream])) === JSON.stringify(whole);

		const bytes = new TextEncoder().encode("id: 7\nevent: response.chunk\ndata: h\u00e9llo \u2713\n\n");
		const cut = bytes.indexOf(0xe2) + 1; // inside the check mark
		const body = new ReadableStream({ start(c) { c.enqueue(bytes.slice(0, cut)); c.enqueue(bytes.slice(cut)); c.close(); } });
		const fromBytes = [];
		for await (const e of readEvents(new Response(body))) fromBytes.push(e);
		return { Whole: whole, AllSplitsAgree: allSplitsAgree, CharByChar: charByChar, Bytes: norm(fromBytes) };
	})()`)
	want := result{
		Whole: []event{
			{"1", "run.started", `{"a":1}`},
			{"2", "response.chunk", "line1\nline2"},
			{"3", "message", "x"},
		},
		AllSplitsAgree: true,
		CharByChar:     true,
		Bytes:          []event{{"7", "response.chunk", "héllo ✓"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parsed\n got %+v\nwant %+v", got, want)
	}
}

// TestDocumentCitations renders response.done's citations of documents
// (API.md's {index, document_id, filename, chunk, start, end, text}) with
// the page's own function: numbered references that open the passage.
// No run of this branch's agent cites a document yet, so this drives the
// renderer directly rather than through a run.
func TestDocumentCitations(t *testing.T) {
	p := open(t, newContractFake(t, nil))
	got := webtest.Eval[string](p, `import("/static/turn.js").then((m) => {
		const list = document.createElement("ol");
		list.id = "cites";
		document.body.append(list);
		m.renderCitations(list, [
			{index: 1, document_id: "d1", filename: "handbook.md", chunk: 0, start: 0, end: 42, text: "The trellis holds the vines."},
			{index: 2, document_id: "d2", filename: "<b>x</b>.pdf", chunk: 3, start: 1200, end: 1800, text: "<script>alert(1)</script>"},
		]);
		list.querySelector("li:nth-of-type(2) button").click();
		const d = document.querySelector("#passage");
		return [list.querySelector("li").value, list.textContent, d.open, d.querySelector("#passage-title").textContent,
			d.querySelector("#passage-where").textContent, d.querySelector("#passage-text").innerHTML].join("|");
	})`)
	want := "1|handbook.md, chunk 0<b>x</b>.pdf, chunk 3|true|[2] <b>x</b>.pdf|Chunk 3, characters 1200–1800 of the document.|<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"
	if got != want {
		t.Errorf("citations:\n got %s\nwant %s", got, want)
	}
	p.Click("#passage-close")
	p.WaitJS("the passage closed", `() => !document.querySelector("#passage").open`)
}

// TestPassageHighlight: the passage dialog's text is the chunk as
// Markdown, rendered safely, with the words the answer cites highlighted:
// a quote the offline model makes (“…” [n]), or the sentence a model's
// answer ends with [n], matched to the chunk's sentence sharing most of
// its words. No markup of the document, nor the highlight's markers,
// get into the page.
func TestPassageHighlight(t *testing.T) {
	p := open(t, newContractFake(t, nil))
	type result struct {
		Quote, Marked, HTML string
	}
	for _, tc := range []struct {
		name, answer, chunk string
		n                   int
		want                result
	}{
		{"the offline model's quote", "From notes.md: “The launch is on 3 May.” [1]", "# Notes\n\nThe team met.\nThe launch is on 3 May.", 1,
			result{"The launch is on 3 May.", "The launch is on 3 May.", "<h1>Notes</h1>\n<p>The team met.<br><mark class=\"quoted\">The launch is on 3 May.</mark></p>"}},
		{"the second of two quotes", "From a.md: “Roses climb the trellis.” [1]\nFrom b.md: “Bamboo is the usual wood.” [2]", "Cedar lasts. Bamboo is the usual wood.", 2,
			result{"Bamboo is the usual wood.", "Bamboo is the usual wood.", "<p>Cedar lasts. <mark class=\"quoted\">Bamboo is the usual wood.</mark></p>"}},
		{"a model's sentence", "Good question. As the notes say, the trellis holds the vines [1].", "The trellis holds the vines. Bamboo is the **usual** wood.", 1,
			result{"As the notes say, the trellis holds the vines", "The trellis holds the vines.", "<p><mark class=\"quoted\">The trellis holds the vines.</mark> Bamboo is the <strong>usual</strong> wood.</p>"}},
		{"a sentence across emphasis", "It is **the usual** wood [1].", "Bamboo is **the usual wood** for it.", 1,
			result{"It is **the usual** wood", "Bamboo is the usual wood for it.", "<p><mark class=\"quoted\">Bamboo is </mark><strong><mark class=\"quoted\">the usual wood</mark></strong><mark class=\"quoted\"> for it.</mark></p>"}},
		{"no sentence close enough", "Paris is the capital of France [1].", "The trellis holds the vines.", 1,
			result{"Paris is the capital of France", "", "<p>The trellis holds the vines.</p>"}},
		{"markup and markers in the document", "The <b>bold</b> claim holds [1].",
			"The <b>bold</b> claim holds. <img src=x onerror=alert(1)> \uE000[x](javascript:alert(1)) https://example.com/\uE001a", 1,
			result{"The <b>bold</b> claim holds", "The <b>bold</b> claim holds.",
				"<p><mark class=\"quoted\">The &lt;b&gt;bold&lt;/b&gt; claim holds.</mark> &lt;img src=x onerror=alert(1)&gt; x <a href=\"https://example.com/a\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">https://example.com/a</a></p>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := webtest.Eval[result](p, fmt.Sprintf(`import("/static/passage.js").then((m) => {
				const box = document.createElement("div");
				const quote = m.citedWords(%s, %d);
				const mark = m.showPassage(box, %s, quote);
				return {Quote: quote, Marked: [...box.querySelectorAll("mark")].map((x) => x.textContent).join(""), HTML: box.innerHTML};
			})`, jsString(tc.answer), tc.n, jsString(tc.chunk)))
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
