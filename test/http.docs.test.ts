import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { escapeHtml, renderDocsPage, type OpenApiDocument } from '../src/http/docs.ts';

const sample: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Payments & Ledger',
    version: '1.2.3',
    description: 'Amounts are decimal strings.\nNever trust <b>bold</b> claims.',
    contact: { url: 'https://example.com/support' },
  },
  servers: [{ url: 'https://api.example.com', description: 'production' }],
  tags: [
    { name: 'Payments', description: 'Money moving around' },
    { name: 'Unused', description: 'a declared tag without operations' },
  ],
  security: [{ apiKey: [] }],
  paths: {
    '/payments/{paymentId}': {
      parameters: [
        { name: 'paymentId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' }, description: 'the payment' },
      ],
      get: {
        operationId: 'getPayment',
        summary: 'Fetch one payment',
        description: 'Returns the payment. <script>alert("owned")</script>',
        tags: ['Payments'],
        parameters: [
          { $ref: '#/components/parameters/Expand' },
        ],
        responses: {
          200: {
            description: 'the payment',
            headers: { ETag: { schema: { type: 'string' }, description: 'the revision' } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Payment' } } },
          },
          404: { $ref: '#/components/responses/NotFound' },
        },
      },
    },
    '/refunds': {
      post: {
        summary: 'Refund a payment',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                additionalProperties: false,
                required: ['paymentId', 'amount'],
                properties: {
                  paymentId: { type: 'string', format: 'uuid' },
                  amount: { type: 'string', pattern: '^\\d+(\\.\\d{1,2})?$', description: 'decimal, at most 2 places' },
                  reason: { type: 'string', enum: ['duplicate', 'fraud', 'requested_by_customer'] },
                  lines: {
                    type: 'array',
                    minItems: 1,
                    items: {
                      type: 'object',
                      properties: { sku: { type: 'string', maxLength: 64 }, quantity: { type: 'integer', minimum: 1 } },
                    },
                  },
                  target: {
                    oneOf: [
                      { $ref: '#/components/schemas/Payment' },
                      { type: 'object', properties: { iban: { type: 'string' } } },
                    ],
                  },
                  note: { type: ['string', 'null'], maxLength: 500 },
                },
              },
            },
          },
        },
        responses: {
          201: { description: 'refund accepted', content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } } },
        },
      },
    },
  },
  components: {
    schemas: {
      Payment: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'status'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          status: { type: 'string', enum: ['pending', 'captured', 'failed'], description: 'where the payment is' },
          amount: { type: 'string', description: 'Watch out for "quotes" & <tags>' },
          metadata: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
    },
    parameters: {
      Expand: { name: 'expand', in: 'query', schema: { type: 'string', enum: ['ledger', 'refunds'] }, description: 'related data' },
    },
    responses: {
      NotFound: { description: 'no such payment' },
    },
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'the client key' },
    },
  },
};

/** The text of the element with the given id, up to the matching closing tag (good enough for these tests). */
function section(html: string, id: string, tag: 'article' | 'section'): string {
  const start = html.indexOf(`<${tag} `, html.lastIndexOf(`<${tag}`, html.indexOf(`id="${id}"`)));
  expect(start, `element #${id}`).to.be.greaterThan(-1);
  return html.slice(start, html.indexOf(`</${tag}>`, start));
}

describe('renderDocsPage', () => {
  const html = renderDocsPage(sample);

  it('renders a complete page with the title, version and description', () => {
    expect(html.startsWith('<!DOCTYPE html>')).to.equal(true);
    expect(html).to.include('</html>');
    expect(html).to.include('<h1>Payments &amp; Ledger</h1>');
    expect(html).to.include('version 1.2.3');
    expect(html).to.include('OpenAPI 3.1.0');
    expect(html).to.include('Never trust &lt;b&gt;bold&lt;/b&gt; claims.');
  });

  it('lists tags in the sidebar, falling back to the first path segment', () => {
    expect(html).to.match(/<li class="nav-tag" data-tag="tag-Payments"><a href="#tag-Payments">Payments<\/a>/);
    expect(html).to.match(/<a href="#tag-refunds">refunds<\/a>/);
    expect(html).to.include('<section class="tag" id="tag-Payments"><h2>Payments</h2><div class="desc">Money moving around</div>');
    expect(html).to.include('<section class="tag" id="tag-refunds">');
    expect(html).not.to.include('Unused');
  });

  it('renders each operation with its method, path, summary and parameters', () => {
    const get = section(html, 'op-getPayment', 'article');
    expect(get).to.include('<span class="method m-get">GET</span>');
    expect(get).to.include('<code class="path">/payments/{paymentId}</code>');
    expect(get).to.include('Fetch one payment');
    expect(get).to.include('<code class="name">paymentId</code>');
    expect(get).to.include('<code class="name">expand</code>');
    expect(get).to.include('<code>&quot;ledger&quot;</code>');
    expect(get).to.include('<span class="format">(uuid)</span>');
    expect(get).to.include('related data');
    expect(get).to.include('Authentication: <code>apiKey</code>');
    expect(get).to.include('<span class="status s2">200</span>');
    expect(get).to.include('<span class="status s4">404</span> <span class="response-desc">no such payment</span>');
    expect(get).to.include('<code class="name">ETag</code>');
    expect(get).to.include('<a class="ref" href="#schema-Payment">Payment</a>');

    const post = section(html, 'op-post-refunds', 'article');
    expect(post).to.include('<span class="method m-post">POST</span>');
    expect(post).to.include('Refund a payment');
    expect(post).to.include('Authentication: <span class="badge">none</span>');
    expect(post).to.match(/Request body <span class="req">required<\/span>/);
    for (const field of ['paymentId', 'amount', 'reason', 'lines', 'sku', 'quantity', 'target', 'iban', 'note']) {
      expect(post).to.include(`<code class="name">${field}</code>`);
    }
    expect(post).to.include('pattern <code>^\\d+(\\.\\d{1,2})?$</code>');
    expect(post).to.include('<code>&quot;requested_by_customer&quot;</code>');
    expect(post).to.include('No other fields.');
    expect(post).to.include('min items 1');
    expect(post).to.include('≥ 1');
    expect(post).to.include('One of');
    expect(post).to.include('<span class="type">string</span> | <span class="type">null</span>');
    expect(post).to.include('#/components/schemas/Missing');
    expect(post).not.to.include('href="#/components');
  });

  it('renders component schemas in their own section, as link targets', () => {
    expect(html).to.include('<section class="components" id="schemas"><h2>Schemas</h2>');
    const payment = section(html, 'schema-Payment', 'section');
    expect(payment).to.include('<h3>Payment</h3>');
    expect(payment).to.include('<code class="name">status</code>');
    expect(payment).to.include('<code>&quot;captured&quot;</code>');
    expect(payment).to.include('where the payment is');
    expect(payment).to.include('No other fields.');
    expect(payment).to.include('Other fields');
    expect(payment).to.include('Watch out for &quot;quotes&quot; &amp; &lt;tags&gt;');
    expect(html).to.include('<a href="#schemas">Schemas</a>');
    expect(html).to.include('<code class="name">apiKey</code></td><td>apiKey · header x-api-key</td>');
  });

  it('escapes markup from the document', () => {
    expect(html).to.include('Returns the payment. &lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;');
    expect(html).not.to.include('<script>alert');
    // The page's own filter script is the only script element.
    expect(html.match(/<script\b/g)).to.have.length(1);
    expect(escapeHtml(`<a href="x" onclick='y'>&`)).to.equal('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;');
  });

  it('loads nothing external: only in-page links, no src attributes, a restrictive CSP', () => {
    const attributes = [...html.matchAll(/\b(src|href)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/gi)];
    expect(attributes.length).to.be.greaterThan(5);
    for (const match of attributes) {
      const value = match[3] ?? match[4] ?? match[5] ?? '';
      expect(match[1]!.toLowerCase(), `attribute ${match[0]}`).to.equal('href');
      expect(value, `attribute ${match[0]}`).to.match(/^#/);
      expect(value).not.to.match(/https?:/i);
    }
    expect(html).not.to.match(/<link\b|@import|url\(/i);
    // URLs from the document are shown as text only.
    expect(html).to.include('<code>https://api.example.com</code>');

    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    expect(csp).to.be.a('string');
    expect(csp).to.include("default-src 'none'");
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(csp).to.include(`style-src ${hash(style)}`);
    expect(csp).to.include(`script-src ${hash(script)}`);
  });

  it('includes a search box and filter data for every operation', () => {
    expect(html).to.match(/<input type="search" id="filter"/);
    expect(html).to.include('data-search="get /payments/{paymentid} fetch one payment getpayment"');
    expect(html).to.include('data-search="post /refunds refund a payment "');
    expect(html).to.include('<li data-op="op-getPayment"><a href="#op-getPayment">');
  });

  it('copes with a minimal document and with recursive inline schemas', () => {
    const minimal = renderDocsPage({ openapi: '3.1.0', info: { title: 'Empty', version: '0' }, paths: {} });
    expect(minimal).to.include('<h1>Empty</h1>');
    expect(minimal).not.to.include('id="schemas"');

    const node: Record<string, unknown> = { type: 'object' };
    node.properties = { child: node };
    const cyclic = renderDocsPage({
      openapi: '3.1.0', info: { title: 'Cyclic', version: '0' }, paths: {},
      components: { schemas: { Node: node } },
    });
    expect(cyclic).to.include('(recursive schema)');
  });
});
