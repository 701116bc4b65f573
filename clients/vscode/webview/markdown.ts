// Model text -> safe DOM: markdown-it (raw HTML off, images off), highlight.js for fenced code
// (a fixed set of languages, no guessing), then DOMPurify. Each code block is wrapped in
// <div class="code-block" data-info="<fence info>"> so the page can give it a header bar.
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import csharp from 'highlight.js/lib/languages/csharp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import kotlin from 'highlight.js/lib/languages/kotlin';
import makefile from 'highlight.js/lib/languages/makefile';
import markdown from 'highlight.js/lib/languages/markdown';
import php from 'highlight.js/lib/languages/php';
import plaintext from 'highlight.js/lib/languages/plaintext';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import swift from 'highlight.js/lib/languages/swift';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';
import { fenceLanguage } from '../src/codeTarget';

const LANGUAGES = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json,
  kotlin, makefile, markdown, php, plaintext, python, ruby, rust, shell, sql, swift, typescript,
  xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
md.disable('image'); // no remote loads from model output (tracking pixels, exfiltration)
const escape = md.utils.escapeHtml;

/** Highlighted HTML for a known language, else the escaped text. */
export function highlight(code: string, language: string): string {
  if (language && hljs.getLanguage(language)) {
    return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  }
  return escape(code);
}

md.renderer.rules.fence = (tokens, index) => {
  const token = tokens[index];
  if (!token) return '';
  const info = token.info.trim();
  const language = fenceLanguage(info);
  const known = language && hljs.getLanguage(language) ? ` language-${escape(language)}` : '';
  return `<div class="code-block" data-info="${escape(info)}"><pre><code class="hljs${known}">` +
    `${highlight(token.content, language)}</code></pre></div>\n`;
};

const SAFE_URL = /^(https?:|mailto:|#)/i;
export const isSafeUrl = (href: string): boolean => SAFE_URL.test(href);

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    if (!isSafeUrl(href)) node.removeAttribute('href');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(text: string): DocumentFragment {
  return DOMPurify.sanitize(md.render(text), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'img'],
    FORBID_ATTR: ['style'],
  });
}
