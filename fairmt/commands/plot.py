"""``fairmt plot embeddings PREDICTIONS``: the t-SNE / PCA figures of the classification papers (Chi et al. Fig. 10,
Shen et al. Fig. 4) from a run's ``predictions.jsonl`` (its ``hidden`` column: the representation the head reads)."""

from __future__ import annotations


def register(groups) -> None:
    from fairmt.commands._options import PLOT_SUFFIXES, count, number, output_file, seed

    p = groups["top"].add_parser("plot", help="figures from a run's outputs (plot embeddings: t-SNE / PCA)")
    sub = p.add_subparsers(dest="plot_command", metavar="FIGURE")
    sub.required = True
    e = sub.add_parser(
        "embeddings",
        help="t-SNE or PCA of a classifier's representations (predictions.jsonl's "
        "hidden column), coloured by task label and by protected group",
    )
    e.add_argument(
        "predictions",
        help="a predictions.jsonl with label, group and hidden (what `fairmt train` writes "
        "for a classification recipe)",
    )
    e.add_argument("--method", choices=("tsne", "pca"), default="tsne", help="the 2-D projection (scikit-learn)")
    output_file(
        e,
        "--out",
        what="plot",
        suffixes=PLOT_SUFFIXES,
        metavar="OUT",
        required=True,
        help="the figure (png, pdf, svg, ...)",
    )
    e.add_argument(
        "--per-label",
        type=count(1),
        default=100,
        metavar="N",
        help="random rows per task label (Shen et al. Fig. 4: 100); 0 is refused, use a large N for all",
    )
    e.add_argument("--seed", type=seed, default=0, help="seed of the sample and of the projection")
    e.add_argument(
        "--perplexity", type=number(0.0, low_open=True), default=30.0, help="t-SNE perplexity (capped below n/3)"
    )
    e.add_argument("--title", default="", help="the figure's title")
    e.set_defaults(handler=_embeddings)


def _embeddings(args) -> int:
    import numpy as np

    from fairmt.commands.eval_classification import read_predictions
    from fairmt.errors import FairmtError
    from fairmt.eval.embedding_plot import plot_embeddings, project, sample_per_label

    pred = read_predictions(args.predictions)
    if pred.hidden is None:
        raise FairmtError(
            f"{args.predictions} has no 'hidden' column: the representations to project (a "
            "classification run writes them unless save_predictions is false)"
        )
    idx = sample_per_label(pred.labels, args.per_label, args.seed)
    points = project(np.asarray(pred.hidden)[idx], args.method, args.seed, args.perplexity)
    plot_embeddings(
        points,
        [pred.labels[i] for i in idx],
        [pred.groups[i] for i in idx],
        args.out,
        title=args.title or f"{args.method.upper()} of {len(idx)} representations",
    )
    print(f"fairmt: {args.method} of {len(idx)} representations ({args.per_label} per label at most) -> {args.out}")
    return 0
