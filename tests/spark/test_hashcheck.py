"""The JVM oracle for String.hashCode inside Spark: rmqlab's hash computed in the executors
agrees with java.util.Objects.hashCode, and a wrong hash is caught."""
import random

import pytest
from reference_model import java_hash as model_hash

pytestmark = pytest.mark.jvm


def random_keys(n, seed):
    rng = random.Random(seed)
    alphabet = "abcXYZ019#_ é中文😀\u0301"
    return [f"Topic{rng.randint(0, 9)}#" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
            for _ in range(n)]


def test_rmqlab_hash_agrees_with_the_jvm_in_the_executors(spark):
    from rmqlab.spark.hashcheck import check_hashes

    keys = random_keys(3000, 11) + ["", "polygenelubricants", "Aa", "BB"]
    df = spark.createDataFrame([(k,) for k in keys] + [(None,)], "key string").repartition(3)
    result = check_hashes(df, "key")
    assert result.checked == len(keys) and result.ok, result.mismatches


def test_a_wrong_hash_is_reported(spark):
    from rmqlab.spark.hashcheck import check_hashes, with_java_hash

    keys = random_keys(200, 5)
    wrong = {keys[3], keys[17]}
    rows = [(k, model_hash(k) + (1 if k in wrong else 0)) for k in keys]
    df = spark.createDataFrame(rows, "key string, h int")
    result = check_hashes(df, "key", hash_column="h")
    assert not result.ok and set(result.mismatches["key"]) == wrong
    # and the executor-side column is rmqlab's own hash, equal to the model
    got = with_java_hash(df, "key").toPandas()
    assert (got["java_hash"] == [model_hash(k) for k in got["key"]]).all()
