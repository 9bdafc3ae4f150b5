package documents

import (
	"strings"

	"golang.org/x/net/html"
)

// htmlText is the readable text of an HTML document: script, style and the
// like dropped, entities decoded, whitespace collapsed outside <pre>,
// block elements on lines of their own, headings as Markdown headings
// after a section break (h1, h2) or a blank line, list items as "- ".
func htmlText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0 // depth inside elements whose text is not text
	pre := 0
	space := false // a space is owed before the next word
	newline := func(n int) {
		// End the current line with n newlines in all (at most).
		s := b.String()
		have := len(s) - len(strings.TrimRight(s, "\n"))
		for ; have < n && b.Len() > 0; have++ {
			b.WriteByte('\n')
		}
		space = false
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch tag {
			case "script", "style", "head", "noscript", "template", "svg", "iframe", "object":
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
				continue
			case "pre":
				if tt == html.StartTagToken {
					pre++
				} else if tt == html.EndTagToken && pre > 0 {
					pre--
				}
				newline(2)
			case "br":
				newline(1)
			case "h1", "h2", "h3", "h4", "h5", "h6":
				if tt == html.StartTagToken {
					if tag <= "h2" {
						newline(3)
					} else {
						newline(2)
					}
					if skip == 0 {
						b.WriteString(strings.Repeat("#", int(tag[1]-'0')) + " ")
					}
				} else {
					newline(2)
				}
			case "li":
				newline(1)
				if tt == html.StartTagToken && skip == 0 {
					b.WriteString("- ")
				}
			case "p", "div", "section", "article", "header", "footer", "main", "nav", "aside",
				"blockquote", "table", "ul", "ol", "dl", "figure", "form", "hr", "address":
				newline(2)
			case "tr", "dt", "dd", "caption":
				newline(1)
			case "td", "th":
				space = true
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			text := string(z.Text())
			if pre > 0 {
				b.WriteString(text)
				continue
			}
			for i, w := range strings.Fields(text) {
				if (i > 0 || space || startsWithSpace(text)) && b.Len() > 0 && !endsWithNewlineOrSpace(b.String()) {
					b.WriteByte(' ')
				}
				b.WriteString(w)
				space = false
			}
			if endsWithSpace(text) {
				space = true
			}
		}
	}
}

func startsWithSpace(s string) bool { return s != "" && strings.TrimLeft(s, " \t\n\r\f") != s }
func endsWithSpace(s string) bool   { return s != "" && strings.TrimRight(s, " \t\n\r\f") != s }
func endsWithNewlineOrSpace(s string) bool {
	return s == "" || s[len(s)-1] == '\n' || s[len(s)-1] == ' '
}
