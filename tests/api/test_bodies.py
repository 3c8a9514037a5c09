"""Request bodies decode strictly into the contract's Structs; whatever is wrong is refused
`invalid` naming the field, found from the Struct's own fields (not by reading msgspec's
message), with the length `limit` the field's type declares."""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from burstmarket.api.bodies import decode
from burstmarket.contract import (
    MAX_NAME,
    MAX_NODE_ID,
    MAX_PRIORITY_CLASS,
    MAX_RELEASE,
    CapacityDeclaration,
    JobChange,
    NewCluster,
    NewJob,
    OfferGrid,
)
from burstmarket.errors import Invalid
from burstmarket.market.desks.inputs import price


def refused(raw: bytes, kind: type[msgspec.Struct]) -> dict[str, object]:
    with pytest.raises(Invalid) as caught:
        decode(raw, kind)
    return caught.value.body()


@pytest.mark.parametrize(
    ("raw", "kind", "field", "limit"),
    [
        (b'{"max_gpus": "8"}', CapacityDeclaration, "max_gpus", None),
        (b'{"max_gpus": 8.0}', CapacityDeclaration, "max_gpus", None),
        (b'{"max_gpus": true}', CapacityDeclaration, "max_gpus", None),
        (b'{"max_price_per_gpu_hour": 2}', CapacityDeclaration, "max_gpus", None),  # missing
        (
            b'{"max_gpus": 8, "max_price_per_gpu_hour": [2]}',
            CapacityDeclaration,
            "max_price_per_gpu_hour",
            None,
        ),
        (b'{"max_gpus": 8, "release": "n1"}', CapacityDeclaration, "release", None),
        (b'{"max_gpus": 8, "release": [1]}', CapacityDeclaration, "release", None),
        # an unknown field, named as sent, whatever its characters
        (b'{"max_gpus": 8, "max gpus!": 8}', CapacityDeclaration, "max gpus!", None),
        (b'{"max_gpus": 8, "\\u00e9t\\u00e9": 1}', CapacityDeclaration, "\u00e9t\u00e9", None),
        # lengths past the type's Meta: the field and the limit
        (b'{"name": "%s", "nodes": 1}' % (b"a" * (MAX_NAME + 1)), NewJob, "name", MAX_NAME),
        (
            b'{"name": "j", "nodes": 1, "priority_class": "%s"}'
            % (b"p" * (MAX_PRIORITY_CLASS + 1)),
            NewJob,
            "priority_class",
            MAX_PRIORITY_CLASS,
        ),
        (
            b'{"max_gpus": 0, "release": [%s]}' % b",".join([b'"n"'] * (MAX_RELEASE + 1)),
            CapacityDeclaration,
            "release",
            MAX_RELEASE,
        ),
        (
            b'{"max_gpus": 0, "release": ["n", "%s"]}' % (b"x" * (MAX_NODE_ID + 1)),
            CapacityDeclaration,
            "release",
            MAX_NODE_ID,
        ),
        # a priority class with a control character: a NUL, a newline, DEL, a C1 control
        *[
            (b'{%s"priority_class": "high%s"}' % (others, char), kind, "priority_class", None)
            for char in (b"\\u0000", b"\\n", b"\\u007f", b"\\u0085")
            for kind, others in ((NewJob, b'"name": "j", "nodes": 1, '), (JobChange, b""))
        ],
        # a field of an item of a list of Structs, named with its place
        (
            b'{"buying_open": true, "reservable_nodes": 0, "cells": '
            b'[{"size_gpus": 8, "term_hours": 1}, {"size_gpus": 8, "term_hours": 0}]}',
            OfferGrid,
            "cells[1].term_hours",
            None,
        ),
        (
            b'{"buying_open": true, "reservable_nodes": 0, "cells": [{"size_gpus": 8}, 3]}',
            OfferGrid,
            "cells[0].term_hours",
            None,
        ),
        (
            b'{"buying_open": true, "reservable_nodes": 0, "cells": [3]}',
            OfferGrid,
            "cells[0]",
            None,
        ),
        # the first fault in the order the body gives its fields
        (b'{"kind": "gpu", "account": 5, "island": "i", "name": "c"}', NewCluster, "kind", None),
        (b'{"account": 5, "kind": "gpu", "island": "i", "name": "c"}', NewCluster, "account", None),
        # not an object, or not JSON: the body as a whole
        (b"[1, 2]", CapacityDeclaration, "body", None),
        (b"null", JobChange, "body", None),
        (b'{"max_gpus": 8', CapacityDeclaration, "body", None),
        (b"\xff\xfe", CapacityDeclaration, "body", None),
    ],
)
def test_a_bad_body_names_its_field(
    raw: bytes, kind: type[msgspec.Struct], field: str, limit: int | None
) -> None:
    body = refused(raw, kind)
    assert body["error"] == "invalid"
    assert body["field"] == field
    assert body.get("limit") == limit


def test_money_is_read_digit_for_digit_and_refused_off_the_grid_never_rounded() -> None:
    data = decode(
        b'{"max_gpus": 8, "max_price_per_gpu_hour": 2.99999999999999999999}', CapacityDeclaration
    )
    assert data.max_price_per_gpu_hour == Decimal("2.99999999999999999999")
    with pytest.raises(Invalid) as caught:
        price("max_price_per_gpu_hour", data.max_price_per_gpu_hour)
    assert caught.value.figures["field"] == "max_price_per_gpu_hour"
    exact = decode(b'{"max_gpus": 8, "max_price_per_gpu_hour": 2.0001}', CapacityDeclaration)
    assert exact.max_price_per_gpu_hour is not None
    assert price("p", exact.max_price_per_gpu_hour) == 2_000_100
    assert decode(
        b'{"max_gpus": 8, "max_price_per_gpu_hour": 3}', CapacityDeclaration
    ).max_price_per_gpu_hour == Decimal(3)


def test_a_field_left_out_stays_unset_and_null_clears_it() -> None:
    assert decode(b"{}", JobChange).limit_price_per_gpu_hour is msgspec.UNSET
    assert decode(b'{"limit_price_per_gpu_hour": null}', JobChange).limit_price_per_gpu_hour is None
