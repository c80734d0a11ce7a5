/**
 * The part of the browser's DOM the page uses, typed here: the repository is type-checked as
 * one Deno program whose library has no DOM, and adding the DOM library to it would clash with
 * Deno's own types. Only `dom()` reaches for the browser's globals; the rest of the page takes
 * what it returns. The browser test (`tests/indexer/dashboard/`) runs all of it in Chromium.
 *
 * @module
 */

/** An event, as far as the page reads it. */
export interface DomEvent {
  /** Stops the browser's default action. */
  preventDefault(): void;
}

/** An element, as far as the page uses it. */
export interface DomElement {
  /** Its id. */
  id: string;
  /** Its text. */
  textContent: string | null;
  /** Whether it is hidden (the `hidden` attribute). */
  hidden: boolean;
  /** Its hover text. */
  title: string;
  /** Its classes. */
  className: string;
  /** Its `data-*` attributes. */
  readonly dataset: Record<string, string | undefined>;
  /** Its inner width in CSS pixels. */
  readonly clientWidth: number;
  /** Its inline style. */
  readonly style: { setProperty(name: string, value: string): void };
  /** Sets an attribute. */
  setAttribute(name: string, value: string): void;
  /** Removes an attribute. */
  removeAttribute(name: string): void;
  /** Appends children. */
  append(...nodes: (DomElement | string)[]): void;
  /** Replaces every child. */
  replaceChildren(...nodes: (DomElement | string)[]): void;
  /** Listens for an event. */
  addEventListener(type: string, listener: (event: DomEvent) => void): void;
  /** Reads an attribute (`null` when absent). */
  getAttribute(name: string): string | null;
  /** Whether `other` is this element or inside it. */
  contains(other: DomElement | null): boolean;
  /** The first element inside it matching `selector`, or `null`. */
  querySelector(selector: string): DomElement | null;
  /** Gives it the keyboard focus. */
  focus(): void;
}

/** A button. */
export interface DomButton extends DomElement {
  /** Whether it is disabled. */
  disabled: boolean;
}

/** The document, as far as the page uses it. */
export interface DomDocument {
  /** The element with `id`, or `null`. */
  getElementById(id: string): DomElement | null;
  /** A new HTML element. */
  createElement(tag: string): DomElement;
  /** A new element in a namespace (SVG). */
  createElementNS(namespace: string, tag: string): DomElement;
  /** Listens for an event (`visibilitychange`). */
  addEventListener(type: string, listener: () => void): void;
  /** Whether the page is in the background. */
  readonly hidden: boolean;
  /** The element with the keyboard focus, or `null`. */
  readonly activeElement: DomElement | null;
}

/** A `ResizeObserver`. */
export interface DomResizeObserver {
  /** Watches an element. */
  observe(element: DomElement): void;
  /** Stops watching. */
  disconnect(): void;
}

/** An `EventSource`, as far as the page uses it. */
export interface DomEventSource {
  /** 0 connecting, 1 open, 2 closed (not reconnected). */
  readonly readyState: number;
  /** Listens for an event of the stream (`event:` name), or `error`. */
  addEventListener(type: string, listener: (event: { data?: string }) => void): void;
  /** Closes it. */
  close(): void;
}

/** The page's address, as far as it uses it. */
export interface DomLocation {
  /** The fragment, `#…` (or `""`). */
  readonly hash: string;
}

/** The browser's globals the page uses. */
export interface Browser {
  /** The document. */
  document: DomDocument;
  /** `fetch`, bound to the window. */
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  /** `new ResizeObserver(callback)`. */
  observeResize: (callback: () => void) => DomResizeObserver;
  /** `new EventSource(url)`, or `null` where there is none. */
  events: (url: string) => DomEventSource | null;
  /** `window.location`. */
  location: DomLocation;
  /** Listens for a window event (`hashchange`). */
  onWindow: (type: string, listener: () => void) => void;
}

/** The browser's globals (only call in a browser). */
export function browser(): Browser {
  const g = globalThis as unknown as {
    document: DomDocument;
    ResizeObserver: new (callback: () => void) => DomResizeObserver;
    EventSource?: new (url: string) => DomEventSource;
    location: DomLocation;
    addEventListener(type: string, listener: () => void): void;
  };
  return {
    document: g.document,
    fetch: (input, init) => globalThis.fetch(input, init),
    observeResize: (callback) => new g.ResizeObserver(callback),
    events: (url) => (g.EventSource ? new g.EventSource(url) : null),
    location: g.location,
    onWindow: (type, listener) => g.addEventListener(type, listener),
  };
}

/** Children of {@linkcode h}: elements, text, or nothing. */
export type Child = DomElement | string | null | undefined | false;

/**
 * A new element with attributes and children: `h(doc, "th", { scope: "col" }, "Stake")`.
 * Attribute values are set as text, never parsed as HTML.
 */
export function h(
  document: DomDocument,
  tag: string,
  attributes: Readonly<Record<string, string>> = {},
  ...children: Child[]
): DomElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) if (child) element.append(child);
  return element;
}

/** The element with `id`; a missing one is a bug in the page. */
export function byId<T extends DomElement = DomElement>(document: DomDocument, id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`The page has no element #${id}`);
  return element as T;
}
