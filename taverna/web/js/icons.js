// Line icons drawn here (24x24, stroke), built as SVG nodes: no font or file needed.

const PATHS = {
  copy: "M9 9h10v10H9z M5 15V5h10",
  picture: "M4 5h16v14H4z M4 16l5-5 4 4 3-3 4 4 M15 8.5a1.5 1.5 0 1 0 0 .1",
  edit: "M4 20h4L19 9l-4-4L4 16z M13.5 6.5l4 4",
  resend: "M4 20h4L17 11l-4-4L4 16z M15 3h6v6 M21 3l-5 5",
  eye: "M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7S2 12 2 12z M12 9a3 3 0 1 0 0 6a3 3 0 1 0 0-6",
  eyeOff: "M3 3l18 18 M10.6 5.1A10 10 0 0 1 12 5c6.5 0 10 7 10 7a17 17 0 0 1-3.2 4.2 M6.6 6.6C3.8 8.4 2 12 2 12s3.5 7 10 7a9.6 9.6 0 0 0 5.4-1.6 M9.9 9.9a3 3 0 0 0 4.2 4.2",
  flag: "M5 21V4 M5 4h12l-2.5 4 2.5 4H5",
  branch: "M6 3v12 M6 15a3 3 0 1 0 0 6a3 3 0 1 0 0-6 M18 3a3 3 0 1 0 0 6a3 3 0 1 0 0-6 M18 9c0 6-12 3-12 6",
  inspect: "M10 4a6 6 0 1 0 0 12a6 6 0 1 0 0-12 M14.5 14.5L20 20",
  regenerate: "M20 12a8 8 0 1 1-2.3-5.7 M20 4v5h-5",
  trash: "M4 7h16 M9 7V4h6v3 M6 7l1 13h10l1-13 M10 11v6 M14 11v6",
  prev: "M15 5l-7 7 7 7",
  next: "M9 5l7 7-7 7",
  continue: "M4 6l7 6-7 6z M13 6l7 6-7 6z",
  impersonate: "M12 3a4 4 0 1 0 0 8a4 4 0 1 0 0-8 M4 21c0-4 3.6-7 8-7s8 3 8 7",
  close: "M6 6l12 12 M18 6L6 18",
  search: "M3 5h10 M3 10h6 M3 15h5 M15 9a4 4 0 1 0 0 8a4 4 0 1 0 0-8 M18 16l3 3",
  up: "M6 15l6-6 6 6",
  down: "M6 9l6 6 6-6",
  first: "M5 4h14 M6 15l6-6 6 6 M12 9v11",
  last: "M5 20h14 M6 9l6 6 6-6 M12 15V4",
  back: "M15 5l-7 7 7 7",
  menu: "M4 6h16 M4 12h16 M4 18h16",
  logout: "M10 4H5v16h5 M14 8l4 4-4 4 M18 12H9",
  note: "M5 4h14v16H5z M8 8h8 M8 12h8 M8 16h5",
  undo: "M9 14L4 9l5-5 M4 9h10a6 6 0 0 1 0 12h-3",
  redo: "M15 14l5-5-5-5 M20 9H10a6 6 0 0 0 0 12h3",
};

/** An SVG icon by name, hidden from assistive technology (the button carries the name). */
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "18");
  svg.setAttribute("height", "18");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.classList.add("i");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", PATHS[name] || PATHS.close);
  svg.append(path);
  return svg;
}
